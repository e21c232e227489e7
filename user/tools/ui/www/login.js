// #/login: user name and password; the "hint" when there are no users yet.
import { get, post } from './api.js';
import { h, errorBox, showError, field } from './dom.js';

export function mount(view, ctx) {
	const user = h('input#login-user', { name: 'user', autocomplete: 'username', required: true, autofocus: true });
	const pass = h('input#login-pass', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
	const submit = h('button#login-submit.btn.btn-primary', { type: 'submit', text: 'Log in' });
	const err = errorBox('login-error');
	const hint = h('div#login-hint.notice', { hidden: true, testid: 'login-hint' });
	const form = h('form#login-form.login-form', { testid: 'login-form', novalidate: true },
		h('h1', { text: 'dsmem console' }),
		h('p.muted', { text: 'Log in to manage simulations, logs, traces and the cluster.' }),
		hint,
		field('User name', user),
		field('Password', pass),
		err,
		h('div.actions', submit));
	view.append(h('section.login-page', form));
	user.focus();

	let alive = true;
	get('/api/login', { allow401: true }).then((info) => {
		if (!alive || !info) return;
		if (info.users === false || (info.hint && !info.users)) {
			hint.textContent = info.hint || 'No users exist yet: create one with "dsctl ui user add NAME role admin".';
			hint.hidden = false;
		}
	}).catch(() => {});

	form.addEventListener('submit', async (ev) => {
		ev.preventDefault();
		showError(err, null);
		if (!user.value.trim() || !pass.value) {
			showError(err, 'Enter a user name and a password.');
			return;
		}
		submit.disabled = true;
		try {
			// a fresh token for each try: it comes with its cookie
			const info = await get('/api/login', { allow401: true });
			const s = await post('/api/login', { user: user.value.trim(), password: pass.value },
				{ allow401: true, csrf: info && info.csrf });
			pass.value = '';
			ctx.loggedIn(s);
		} catch (e) {
			pass.select();
			showError(err, e.status === 429 && !/too many/i.test(e.message) ? `Too many failed attempts: ${e.message}` : e.message);
		} finally {
			submit.disabled = false;
		}
	});
	return () => { alive = false; };
}
