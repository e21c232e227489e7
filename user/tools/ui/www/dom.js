// Small DOM helpers: no framework, no innerHTML with data (the CSP and XSS both
// forbid building markup from strings).

const PROPS = new Set(['value', 'checked', 'disabled', 'selected', 'hidden', 'max', 'min',
	'step', 'multiple', 'required', 'placeholder', 'type', 'name', 'href', 'download',
	'htmlFor', 'title', 'autocomplete', 'accept', 'rows', 'open', 'indeterminate']);

// h('tag#id.class', {attrs...}, children...)
export function h(spec, attrs, ...children) {
	const tag = /^[a-z][a-z0-9-]*/i.exec(spec);
	const el = document.createElement(tag ? tag[0] : 'div');
	const classes = [];
	for (const [, kind, name] of spec.slice(tag ? tag[0].length : 0).matchAll(/([#.])([\w-]+)/g)) {
		if (kind === '#') el.id = name;
		else classes.push(name);
	}
	if (classes.length) el.className = classes.join(' ');
	if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
		children.unshift(attrs);
		attrs = null;
	}
	for (const [k, v] of Object.entries(attrs || {})) {
		if (v === undefined || v === null || v === false) continue;
		if (k === 'class') el.className = [el.className, v].filter(Boolean).join(' ');
		else if (k === 'text') el.textContent = v;
		else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
		else if (k === 'testid') el.setAttribute('data-testid', v);
		else if (PROPS.has(k)) el[k] = v;
		else el.setAttribute(k, v === true ? '' : String(v));
	}
	append(el, children);
	return el;
}

export function append(el, children) {
	for (const c of children.flat(Infinity)) {
		if (c === null || c === undefined || c === false) continue;
		el.append(c instanceof Node ? c : document.createTextNode(String(c)));
	}
	return el;
}

export function clear(el, ...children) {
	el.replaceChildren();
	return append(el, children);
}

// An error box: role=alert, class "error"; hidden while empty.
export function errorBox(id) {
	const el = h('div.error', { id, role: 'alert', hidden: true });
	return el;
}

export function showError(el, err) {
	if (!el) return;
	if (!err) {
		el.textContent = '';
		el.hidden = true;
		return;
	}
	el.textContent = typeof err === 'string' ? err : (err.message || String(err));
	el.hidden = false;
}

// A form field with a label.  The control gets the id; the label points at it.
export function field(label, control, help) {
	return h('div.field',
		h('label', { htmlFor: control.id, text: label }),
		control,
		help ? h('div.help', typeof help === 'string' ? { text: help } : null, typeof help === 'string' ? null : help) : null);
}

export function fmtNumber(v, digits = 4) {
	if (v === null || v === undefined || v === '') return '';
	if (typeof v !== 'number') return String(v);
	if (Number.isInteger(v)) return v.toLocaleString('en-US');
	return Number(v.toFixed(digits)).toString();
}

export function fmtBytes(n) {
	if (typeof n !== 'number') return n === null || n === undefined ? '' : String(n);
	const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
	let i = 0;
	let v = n;
	while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
	return i === 0 ? `${n} B` : `${v.toFixed(v >= 100 ? 0 : 1)} ${u[i]}`;
}

// Timestamps: ISO strings pass through (shortened), numbers are Unix seconds
// (or milliseconds when implausibly large).
export function fmtTime(ts) {
	if (ts === null || ts === undefined || ts === '') return '';
	let d;
	if (typeof ts === 'number') d = new Date(ts > 1e12 ? ts : ts * 1000);
	else if (/^\d+(\.\d+)?$/.test(ts)) d = new Date(Number(ts) * 1000);
	else d = new Date(ts);
	if (Number.isNaN(d.getTime())) return String(ts);
	const p = (x, n = 2) => String(x).padStart(n, '0');
	return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
		`${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// Render any JSON value generically: arrays of objects as tables, objects as
// key/value tables, scalars as text.
export function renderValue(v, depth = 0) {
	if (v === null || v === undefined) return h('span.muted', { text: '—' });
	if (Array.isArray(v)) {
		if (v.length === 0) return h('span.muted', { text: 'none' });
		if (v.every((x) => x && typeof x === 'object' && !Array.isArray(x))) return objectsTable(v, depth);
		return h('span', { text: v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ') });
	}
	if (typeof v === 'object') {
		const keys = Object.keys(v);
		if (keys.length === 0) return h('span.muted', { text: 'none' });
		return h('table.kv', h('tbody', keys.map((k) =>
			h('tr', { 'data-key': k }, h('th', { scope: 'row', text: k }), h('td', renderValue(v[k], depth + 1))))));
	}
	if (typeof v === 'boolean') return h('span', { class: v ? 'yes' : 'no', text: v ? 'yes' : 'no' });
	// integers as dsctl -j has them: ids, ports and sizes are not grouped
	return h('span', { text: typeof v === 'number' && !Number.isInteger(v) ? fmtNumber(v) : String(v) });
}

export function objectsTable(rows, depth = 0) {
	const keys = [];
	for (const r of rows) for (const k of Object.keys(r)) if (!keys.includes(k)) keys.push(k);
	return h('table.grid',
		h('thead', h('tr', keys.map((k) => h('th', { text: k })))),
		h('tbody', rows.map((r) => h('tr', keys.map((k) => {
			const v = r[k];
			return h('td', { class: typeof v === 'number' ? 'num' : null }, renderValue(v, depth + 1));
		})))));
}

// A simple table from column specs: [{label, get(row) -> Node|string, num?}]
export function table(columns, rows, opts = {}) {
	return h('table.grid', { id: opts.id, testid: opts.testid },
		h('thead', h('tr', columns.map((c) => h('th', { class: c.num ? 'num' : null, text: c.label })))),
		h('tbody', rows.map((r) => {
			const tr = h('tr', columns.map((c) => {
				const v = c.get(r);
				return h('td', { class: c.num ? 'num' : null }, v instanceof Node ? v : (v ?? ''));
			}));
			if (opts.rowAttrs) for (const [k, v] of Object.entries(opts.rowAttrs(r))) tr.setAttribute(k, v);
			return tr;
		})));
}

// Trigger a download of in-memory data.
export function downloadBlob(name, data, type) {
	const url = URL.createObjectURL(new Blob([data], { type }));
	const a = h('a', { href: url, download: name });
	document.body.append(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(url), 10000);
}
