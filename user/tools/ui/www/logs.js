// #/logs: search the event log (module events and the console's audit log),
// page back with the cursor, export, and follow new events live: the server
// pushes them (Server-Sent Events on /api/logs/stream), nothing polls.
import { get, qs } from './api.js';
import { h, clear, errorBox, showError, field, fmtTime } from './dom.js';

const LEVELS = ['debug', 'info', 'warning', 'error'];
const COMPONENTS = ['device', 'peer', 'segment', 'node', 'cache', 'migration', 'module', 'audit', 'console'];
const RETRY_MS = 5000;	// after the server refused a stream (busy, logged out)
const MAX_ROWS = 5000;	// the live tail drops the oldest rows past this

export function mount(view) {
	let alive = true;
	let events = [];	// shown, newest first
	let next = null;	// cursor for "Older"
	let applied = {};	// the filters of the last search
	let source = null;	// the live tail's EventSource
	let retryTimer = null;

	const fromIn = h('input#logs-from', { type: 'datetime-local', step: '1' });
	const toIn = h('input#logs-to', { type: 'datetime-local', step: '1' });
	const levelSel = h('select#logs-level', h('option', { value: '', text: 'any' }),
		LEVELS.map((l) => h('option', { value: l, text: l })));
	const nodeIn = h('input#logs-node', { placeholder: 'any', autocomplete: 'off' });
	const compSel = h('select#logs-component', h('option', { value: '', text: 'any' }),
		COMPONENTS.map((c) => h('option', { value: c, text: c })));
	const qIn = h('input#logs-q', { type: 'search', placeholder: 'text in the message', autocomplete: 'off' });
	const limitSel = h('select#logs-limit', [10, 50, 100, 200, 500, 1000].map((n) =>
		h('option', { value: String(n), text: String(n), selected: n === 100 })));
	const searchBtn = h('button#logs-search.btn.btn-primary', { type: 'submit', text: 'Search' });
	const resetBtn = h('button#logs-reset.btn', { type: 'button', text: 'Reset' });
	const err = errorBox('logs-error');
	const csvLink = h('a#logs-export-csv.btn', { href: '/api/logs?format=csv', download: 'dsmem-logs.csv', text: 'Export CSV', testid: 'logs-export-csv' });
	const jsonLink = h('a#logs-export-json.btn', { href: '/api/logs?format=json', download: 'dsmem-logs.json', text: 'Export JSON', testid: 'logs-export-json' });
	const liveIn = h('input#logs-live', { type: 'checkbox', testid: 'logs-live' });
	const liveLabel = h('label.toggle', { htmlFor: 'logs-live' }, liveIn, h('span', { text: ' Live tail' }));
	const liveState = h('span#logs-live-state.muted');
	const count = h('span#logs-count.muted', { testid: 'logs-count' });
	const tbody = h('tbody');
	const tableEl = h('table.grid.logs#logs-table', { testid: 'logs-table' },
		h('thead', h('tr', h('th', { text: 'Time' }), h('th', { text: 'Level' }), h('th', { text: 'Node' }),
			h('th', { text: 'Component' }), h('th', { text: 'Message' }))), tbody);
	const empty = h('p.muted#logs-empty', { text: 'No matching events.', hidden: true });
	const olderBtn = h('button#logs-older.btn', { type: 'button', text: 'Older', hidden: true, testid: 'logs-older' });
	const olderErr = errorBox('logs-older-error');

	const form = h('form#logs-form.form.filters', { testid: 'logs-form', novalidate: true },
		h('div.filter-row',
			field('From', fromIn), field('To', toIn), field('Level', levelSel), field('Node', nodeIn),
			field('Component', compSel), field('Text', qIn), field('Limit', limitSel)),
		h('div.actions', searchBtn, resetBtn, h('span.spacer'), liveLabel, liveState, csvLink, jsonLink),
		err);

	view.append(h('div.page',
		h('div.page-head', h('h1', { text: 'Logs' }),
			h('p.muted', { text: 'Module events (device, peer, segment, node, cache, migration, module), the console\'s audit log and its own events, newest first. Click an event with data to see it.' })),
		h('section.card', form),
		h('section.card',
			h('div.card-head', h('h2', { text: 'Events' }), count),
			h('div.table-scroll', tableEl), empty,
			h('div.actions', olderBtn), olderErr)));

	function toUnix(v) {
		if (!v) return '';
		const t = new Date(v).getTime();
		return Number.isNaN(t) ? v : String(Math.floor(t / 1000));
	}

	function filters() {
		return {
			from: toUnix(fromIn.value),
			to: toUnix(toIn.value),
			level: levelSel.value,
			node: nodeIn.value.trim(),
			component: compSel.value,
			q: qIn.value.trim(),
			limit: limitSel.value,
		};
	}

	function updateExports() {
		csvLink.href = `/api/logs${qs({ ...applied, format: 'csv' })}`;
		jsonLink.href = `/api/logs${qs({ ...applied, format: 'json' })}`;
	}

	function row(ev) {
		const msg = h('td.msg', { text: ev.message ?? '' });
		const tr = h('tr.log-row', { 'data-id': ev.id, 'data-level': ev.level || '', 'data-component': ev.component || '' },
			h('td.time', { text: fmtTime(ev.ts), title: String(ev.ts ?? '') }),
			h('td.tight', h('span', { class: `level level-${ev.level || 'none'}`, text: ev.level || '' })),
			h('td.tight', { text: ev.node ?? '' }),
			h('td.tight', { text: ev.component ?? '' }),
			msg);
		const hasData = ev.data && typeof ev.data === 'object' && Object.keys(ev.data).length;
		if (hasData) {
			tr.classList.add('expandable');
			tr.title = 'click to show the event\'s data';
			tr.addEventListener('click', () => {
				const open = tr.nextSibling && tr.nextSibling.classList && tr.nextSibling.classList.contains('log-data');
				if (open) { tr.nextSibling.remove(); return; }
				tr.after(h('tr.log-data', h('td', { colspan: 5 }, h('pre', { text: JSON.stringify(ev.data, null, 2) }))));
			});
		}
		return tr;
	}

	function render() {
		clear(tbody, events.map(row));
		empty.hidden = events.length > 0;
		olderBtn.hidden = next === null || next === undefined;
		count.textContent = `${events.length} event${events.length === 1 ? '' : 's'} shown`;
	}

	// Each search supersedes the ones before: a slower earlier answer is
	// dropped.  The table's data-seq counts the searches shown (for tests).
	let searchSeq = 0;
	async function search() {
		const my = ++searchSeq;
		showError(err, null);
		showError(olderErr, null);
		applied = filters();
		updateExports();
		tableEl.dataset.busy = 'true';
		try {
			const r = await get(`/api/logs${qs(applied)}`);
			if (!alive || my !== searchSeq) return;
			events = (r && r.events) || [];
			next = r ? r.next : null;
			render();
			if (liveIn.checked) tail();
		} catch (e) {
			if (alive && my === searchSeq) showError(err, e.message);
		} finally {
			if (my === searchSeq) {
				delete tableEl.dataset.busy;
				tableEl.dataset.seq = String(my);
			}
		}
	}

	async function older() {
		if (next === null || next === undefined) return;
		showError(olderErr, null);
		olderBtn.disabled = true;
		const my = searchSeq;
		try {
			const r = await get(`/api/logs${qs({ ...applied, before: next })}`);
			if (!alive || my !== searchSeq) return;
			const have = new Set(events.map((e) => e.id));
			const more = ((r && r.events) || []).filter((e) => !have.has(e.id));
			events = events.concat(more);
			next = r ? r.next : null;
			tbody.append(...more.map(row));
			empty.hidden = events.length > 0;
			olderBtn.hidden = next === null || next === undefined;
			count.textContent = `${events.length} event${events.length === 1 ? '' : 's'} shown`;
		} catch (e) {
			if (alive) showError(olderErr, e.message);
		} finally {
			olderBtn.disabled = false;
		}
	}

	function newestId() {
		return events.reduce((m, e) => (typeof e.id === 'number' && e.id > m ? e.id : m), 0);
	}

	function stopTail() {
		clearTimeout(retryTimer);
		retryTimer = null;
		if (source) source.close();
		source = null;
	}

	function addFresh(e) {
		if (events.some((x) => x.id === e.id)) return;
		events.unshift(e);
		const tr = row(e);
		tr.classList.add('fresh');
		tbody.prepend(tr);
		while (events.length > MAX_ROWS) { events.pop(); tbody.lastChild.remove(); }
		empty.hidden = true;
		count.textContent = `${events.length} event${events.length === 1 ? '' : 's'} shown`;
	}

	// The server sends what matches the applied filters, each event once;
	// the browser's EventSource reconnects by itself with Last-Event-ID.
	// A stream the server refused (too many open, the session gone) is
	// closed for good: look at the session (a 401 goes to the login page)
	// and try again a little later.
	function tail() {
		stopTail();
		if (!alive || !liveIn.checked) return;
		// new events cannot match an upper time bound or a cursor: leave those out
		const { to, from, limit, ...f } = applied;
		const my = searchSeq;
		// from the newest shown (none shown: from now on)
		const es = new EventSource(`/api/logs/stream${qs({ ...f, after: newestId() || '' })}`);
		source = es;
		es.addEventListener('open', () => {
			liveState.textContent = 'following';
			showError(err, null);
		});
		es.addEventListener('message', (m) => {
			if (!alive || es !== source || my !== searchSeq) return;
			let e;
			try { e = JSON.parse(m.data); } catch { return; }
			addFresh(e);
			liveState.textContent = `following · ${new Date().toLocaleTimeString()}`;
		});
		es.addEventListener('error', () => {
			if (es !== source) return;
			if (es.readyState !== EventSource.CLOSED) {
				liveState.textContent = 'reconnecting…';
				return;
			}
			source = null;
			get('/api/session').then(() => {
				if (alive) showError(err, 'Live tail: the server refused the stream (too many open?); trying again');
			}).catch(() => {});
			retryTimer = setTimeout(tail, RETRY_MS);
		});
	}

	form.addEventListener('submit', (ev) => { ev.preventDefault(); search(); });
	resetBtn.addEventListener('click', () => {
		fromIn.value = ''; toIn.value = ''; levelSel.value = ''; nodeIn.value = '';
		compSel.value = ''; qIn.value = ''; limitSel.value = '100';
		search();
	});
	olderBtn.addEventListener('click', older);
	liveIn.addEventListener('change', () => {
		liveLabel.classList.toggle('on', liveIn.checked);
		if (liveIn.checked) {
			liveState.textContent = 'connecting…';
			tail();
		} else {
			stopTail();
			liveState.textContent = '';
		}
	});

	search();

	return () => {
		alive = false;
		stopTail();
	};
}
