// #/users (admins): add and remove the console's users, change a role,
// reset a password.  The server checks every rule (the same calls as
// "dsctl ui user"); the page shows what it answers.
import { get, post, del, api, session } from './api.js';
import { h, clear, errorBox, showError, field, table, fmtTime } from './dom.js';

export function mount(view) {
	let alive = true;

	const nameIn = h('input#users-name', { autocomplete: 'off', placeholder: 'letters, digits, . _ -' });
	const roleSel = h('select#users-role', ['viewer', 'admin'].map((r) => h('option', { value: r, text: r })));
	const passIn = h('input#users-pass', { type: 'password', autocomplete: 'new-password' });
	const addBtn = h('button#users-add.btn.btn-primary', { type: 'submit', text: 'Add user' });
	const addErr = errorBox('users-add-error');
	const ok = h('div#users-ok.notice.ok', { role: 'status', hidden: true });
	const listErr = errorBox('users-error');
	const body = h('div.table-scroll#users-body');

	const form = h('form#users-form.form', { testid: 'users-form', novalidate: true },
		h('div.filter-row', field('User name', nameIn), field('Role', roleSel), field('Password', passIn)),
		addErr, h('div.actions', addBtn));

	view.append(h('div.page',
		h('div.page-head', h('h1', { text: 'Users' }),
			h('p.muted', { text: 'Who may log in to the console. Viewers see every page; admins also change the cache\'s settings and manage users. The last admin cannot be removed or made a viewer. A reset password ends that user\'s sessions. Every change is in the audit log.' })),
		ok,
		h('section.card', h('h2', { text: 'Add a user' }), form),
		h('section.card', h('div.card-head', h('h2', { text: 'Users' })), listErr, body)));

	function done(text) {
		ok.textContent = text;
		ok.hidden = false;
		load();
	}

	async function act(errEl, fn, text) {
		showError(errEl, null);
		ok.hidden = true;
		try {
			await fn();
			done(text);
		} catch (e) {
			showError(errEl, e.message);
			load(true);	// the rows as the server has them: a refused role is not shown as set
		}
	}

	function row(u) {
		const role = h('select.users-row-role', { 'aria-label': `role of ${u.name}` },
			['viewer', 'admin'].map((r) => h('option', { value: r, text: r, selected: r === u.role })));
		const setRole = h('button.btn.users-set-role', { type: 'button', text: 'Change role' });
		const pw = h('input.users-row-pass', { type: 'password', autocomplete: 'new-password', placeholder: 'new password', 'aria-label': `new password of ${u.name}` });
		const reset = h('button.btn.users-reset', { type: 'button', text: 'Reset password' });
		const remove = h('button.btn.btn-danger.users-remove', { type: 'button', text: 'Remove' });
		const enc = encodeURIComponent(u.name);
		setRole.addEventListener('click', () => act(listErr, () => api('PATCH', `/api/users/${enc}`, { role: role.value }),
			`${u.name} is now ${role.value}.`));
		reset.addEventListener('click', () => act(listErr, () => post(`/api/users/${enc}/password`, { password: pw.value }),
			`The password of ${u.name} is reset.`));
		remove.addEventListener('click', () => {
			if (!window.confirm(`Remove ${u.name}?`)) return;
			act(listErr, () => del(`/api/users/${enc}`), `${u.name} is removed.`);
		});
		return { u, role, setRole, pw, reset, remove };
	}

	async function load(keepError = false) {
		try {
			const r = await get('/api/users');
			if (!alive) return;
			if (!keepError) showError(listErr, null);
			const rows = ((r && r.users) || []).map(row);
			clear(body, table([
				{ label: 'User', get: (x) => h('span', { text: x.u.name + (x.u.name === session.user ? ' (you)' : '') }) },
				{ label: 'Role', get: (x) => h('span.inline-form', x.role, x.setRole) },
				{ label: 'Password', get: (x) => h('span.inline-form', x.pw, x.reset) },
				{ label: 'Added', get: (x) => fmtTime(x.u.created * 1000) },
				{ label: '', get: (x) => x.remove },
			], rows, { id: 'users-table', rowAttrs: (x) => ({ 'data-user': x.u.name, 'data-role': x.u.role }) }));
		} catch (e) {
			if (alive) showError(listErr, e.message);
		}
	}

	form.addEventListener('submit', (ev) => {
		ev.preventDefault();
		const name = nameIn.value.trim();
		act(addErr, async () => {
			await post('/api/users', { name, role: roleSel.value, password: passIn.value });
			nameIn.value = '';
			passIn.value = '';
		}, `${name} is added as ${roleSel.value}.`);
	});

	load();
	return () => { alive = false; };
}
