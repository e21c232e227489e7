// The console's entry point: hash routes, the top bar, and the session.
import { get, post, session, setSession, setUnauthorizedHandler, isAdmin } from './api.js';
import { showError } from './dom.js';
import * as login from './login.js';
import * as sim from './sim.js';
import * as logs from './logs.js';
import * as data from './data.js';
import * as cluster from './cluster.js';
import * as store from './store.js';
import * as users from './users.js';

const pages = { login, sim, logs, data, cluster, store, users };
const titles = { login: 'Log in', sim: 'Simulation', logs: 'Logs', data: 'Data', cluster: 'Cluster', store: 'Store', users: 'Users' };
// pages only admins get (the server refuses their API to the rest too)
const ADMIN_ONLY = new Set(['users']);
const DEFAULT = '#/sim';

let current = null;	// { name, cleanup }
let seq = 0;		// routing generation: a slower earlier route() gives way
let wanted = DEFAULT;	// where to go after logging in

function pageName(hash) {
	const m = /^#\/([a-z]+)/.exec(hash || '');
	return m && pages[m[1]] ? m[1] : null;
}

function leave() {
	if (current && current.cleanup) {
		try { current.cleanup(); } catch (e) { console.error(e); }
	}
	current = null;
}

function toLogin() {
	const name = pageName(location.hash);
	if (name && name !== 'login') wanted = location.hash;
	if (location.hash !== '#/login') location.hash = '#/login';
	else route();
}

setUnauthorizedHandler(() => {
	if (pageName(location.hash) !== 'login') toLogin();
});

async function haveSession() {
	if (session.user) return true;
	try {
		setSession(await get('/api/session', { allow401: true }));
		return true;
	} catch (e) {
		if (e.status === 401) return false;
		throw e;
	}
}

function renderTopbar(name) {
	const bar = document.getElementById('topbar');
	bar.hidden = name === 'login' || !session.user;
	document.getElementById('nav-user').textContent = session.user || '';
	const role = document.getElementById('nav-role');
	role.textContent = session.role || '';
	role.className = `badge role-${session.role || 'none'}`;
	for (const a of document.querySelectorAll('#nav a[data-admin]')) a.hidden = !isAdmin();
	for (const a of document.querySelectorAll('#nav a[data-route]')) {
		const on = a.dataset.route === name;
		a.classList.toggle('active', on);
		if (on) a.setAttribute('aria-current', 'page');
		else a.removeAttribute('aria-current');
	}
}

async function route() {
	const my = ++seq;
	let name = pageName(location.hash);
	if (!name) {
		location.replace(DEFAULT);	// hashchange routes again
		return;
	}
	const view = document.getElementById('view');
	let ok;
	try {
		ok = await haveSession();
	} catch (e) {
		if (my !== seq) return;
		leave();
		view.replaceChildren();
		const err = document.createElement('div');
		err.className = 'error';
		err.setAttribute('role', 'alert');
		err.textContent = `Cannot reach the console: ${e.message}`;
		view.append(err);
		return;
	}
	if (my !== seq) return;
	if (!ok && name !== 'login') {
		toLogin();
		return;
	}
	if (ok && ADMIN_ONLY.has(name) && !isAdmin()) {
		location.replace(DEFAULT);
		return;
	}
	if (ok && name === 'login') {
		const to = wanted && pageName(wanted) !== 'login' ? wanted : DEFAULT;
		wanted = DEFAULT;
		location.hash = to;
		return;
	}
	leave();
	renderTopbar(name);
	document.title = `${titles[name]} · dsmem console`;
	view.replaceChildren();
	view.dataset.page = name;
	const ctx = {
		loggedIn(s) {
			setSession(s);
			const to = wanted && pageName(wanted) !== 'login' ? wanted : DEFAULT;
			wanted = DEFAULT;
			location.hash = to;
		},
	};
	current = { name, cleanup: pages[name].mount(view, ctx) };
}

document.getElementById('logout').addEventListener('click', async () => {
	const errEl = document.getElementById('logout-error');
	showError(errEl, null);
	try {
		await post('/api/logout', {}, { allow401: true });
	} catch (e) {
		if (e.status !== 401) {
			showError(errEl, `Logout failed: ${e.message}`);
			return;
		}
	}
	setSession(null);
	wanted = DEFAULT;
	location.hash = '#/login';
});

window.addEventListener('hashchange', route);
route();
