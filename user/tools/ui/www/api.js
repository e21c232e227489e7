// The console's API client: JSON in and out, the CSRF header on every
// state-changing request, and any 401 sends the user to the login page.

export const session = { user: null, role: null, csrf: null, expires: null };

export class ApiError extends Error {
	constructor(status, message, body) {
		super(message);
		this.status = status;
		this.body = body;
	}
}

let onUnauthorized = () => {};
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

export function setSession(s) {
	session.user = s ? s.user : null;
	session.role = s ? s.role : null;
	session.csrf = s ? s.csrf : null;
	session.expires = s ? s.expires : null;
}

export function isAdmin() { return session.role === 'admin'; }

// api('GET', '/api/x') / api('POST', '/api/x', {json}) / api('POST', url, formData)
// opts.allow401: the caller handles 401 itself (the login form).
// opts.csrf: the CSRF token to send instead of the session's.
export async function api(method, url, body, opts = {}) {
	const headers = { Accept: 'application/json' };
	const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
	// opts.csrf: the login form's token, before there is a session
	const csrf = opts.csrf || session.csrf;
	if (method !== 'GET' && method !== 'HEAD' && csrf) headers['X-CSRF-Token'] = csrf;
	if (body instanceof FormData) {
		init.body = body;
	} else if (body !== undefined) {
		headers['Content-Type'] = 'application/json';
		init.body = JSON.stringify(body);
	}
	let r;
	try {
		r = await fetch(url, init);
	} catch (e) {
		throw new ApiError(0, `cannot reach the console server (${e.message})`);
	}
	let data = null;
	const text = await r.text();
	if (text) {
		try { data = JSON.parse(text); } catch { data = null; }
	}
	if (r.status === 401 && !opts.allow401) {
		setSession(null);
		onUnauthorized();
	}
	if (!r.ok) {
		let msg = data && typeof data.error === 'string' ? data.error : `${r.status} ${r.statusText}`.trim();
		if (r.status === 429) {
			const ra = r.headers.get('Retry-After');
			if (ra && !/retry|try again/i.test(msg)) msg += ` (try again in ${ra} s)`;
		}
		throw new ApiError(r.status, msg, data);
	}
	return data;
}

export const get = (url, opts) => api('GET', url, undefined, opts);
export const post = (url, body, opts) => api('POST', url, body === undefined ? {} : body, opts);
export const del = (url, opts) => api('DELETE', url, undefined, opts);

// Build a query string from an object, leaving out empty values.
export function qs(params) {
	const u = new URLSearchParams();
	for (const [k, v] of Object.entries(params)) {
		if (v === undefined || v === null || v === '') continue;
		u.set(k, String(v));
	}
	const s = u.toString();
	return s ? `?${s}` : '';
}
