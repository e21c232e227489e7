// #/store: the object store, read only -- its masters and leader, the
// counters and evictions, each tier's and segment's use, refreshed every
// 5 s; objects by key prefix on demand (when the console has a node to
// join the store as).
import { get, qs } from './api.js';
import { h, clear, errorBox, showError, field, table, fmtNumber, fmtBytes, fmtTime } from './dom.js';

const POLL_MS = 5000;
const PAGE = 100;
const TIER_NAMES = { dram: 'DRAM', nvmeof: 'NVMe-oF' };

export function mount(view) {
	let alive = true;
	let timer = null;
	let cfg = null;
	let master = null;	// the last master record, for the watermarks

	const status = h('div#store-status.status-line', { testid: 'store-status', text: 'asking the masters…' });
	const cfgMsg = h('div#store-config-msg.notice.warn', { role: 'status', hidden: true, testid: 'store-config-msg' });
	const err = errorBox('store-error');
	const updated = h('span#store-updated.muted');

	const card = (id, title, ...body) => h(`section.card#${id}`, { testid: id },
		h('div.card-head', h('h2', { text: title })), ...body);
	const mastersBody = h('div#store-masters-body');
	const countersBody = h('div.stats#store-counters-body');
	const evictBody = h('div.stats#store-eviction-body');
	const tiersBody = h('div#store-tiers-body');
	const segsBody = h('div.table-scroll#store-segments-body');

	// ---- objects by prefix --------------------------------------------------
	const prefixIn = h('input#store-prefix', { placeholder: 'key prefix (empty: all)', autocomplete: 'off', testid: 'store-prefix' });
	const listBtn = h('button#store-list.btn.btn-primary', { type: 'submit', text: 'List' });
	const moreBtn = h('button#store-more.btn', { type: 'button', text: 'More', hidden: true });
	const objMsg = h('div#store-objects-msg.notice.warn', { role: 'status', hidden: true, testid: 'store-objects-msg' });
	const objErr = errorBox('store-objects-error');
	const objBody = h('div.table-scroll#store-objects-body');
	const objForm = h('form#store-objects-form.inline-form', { novalidate: true },
		field('Prefix', prefixIn), h('div.actions', listBtn));
	let objRows = [];
	let next = null;
	let listed = '';

	view.append(h('div.page',
		h('div.page-head', h('h1', { text: 'Store' }), h('div.toolbar', updated)),
		status, cfgMsg, err,
		h('div.cluster-grid',
			card('store-masters', 'Masters', mastersBody),
			card('store-counters', 'Metadata', countersBody),
			card('store-eviction', 'Eviction', evictBody),
			card('store-tiers', 'Tiers', tiersBody)),
		card('store-segments', 'Segments', segsBody),
		card('store-objects', 'Objects', objMsg, objForm, objErr, objBody, h('div.actions', moreBtn))));

	objForm.addEventListener('submit', (ev) => {
		ev.preventDefault();
		listObjects(false);
	});
	moreBtn.addEventListener('click', () => listObjects(true));

	function stat(label, value, key) {
		return h('div.stat', { 'data-key': key },
			h('div.stat-value', { text: value === '' || value === null || value === undefined ? '—' : value }),
			h('div.stat-label', { text: label }));
	}

	// A use from 0 to 1 as a bar: past the low watermark it is high, past
	// the high one (where eviction starts) it is too high.
	function usage(use, id) {
		const wm = master && master.high_watermark_pct ? master : null;
		const m = h('meter', {
			id, min: 0, max: 1, value: typeof use === 'number' ? use : 0,
			low: wm ? wm.low_watermark_pct / 100 : 0.85,
			high: wm ? wm.high_watermark_pct / 100 : 0.95,
			optimum: 0,
			title: typeof use === 'number' ? `${(use * 100).toFixed(1)}% used` : 'no size',
		});
		return h('span.usage', m, h('span.pct', { text: typeof use === 'number' ? `${(use * 100).toFixed(1)}%` : '—' }));
	}

	function renderMaster(m) {
		master = m;
		status.className = 'status-line up';
		status.textContent = m.leader ? `leader ${m.leader} · term ${m.term}` : `no leader · term ${m.term}`;
		const rows = [];
		if (m.leader) rows.push({ addr: m.leader, role: 'leader' });
		for (const s of m.standbys || []) rows.push({ addr: s, role: 'standby' });
		for (const a of m.masters || []) {
			if (!rows.some((r) => r.addr === a)) rows.push({ addr: a, role: 'configured' });
		}
		clear(mastersBody,
			table([
				{ label: 'Address', get: (r) => r.addr },
				{ label: 'Role', get: (r) => h(`span.state.role-${r.role}`, { text: r.role }) },
			], rows, { id: 'store-masters-table', rowAttrs: (r) => ({ 'data-role': r.role }) }),
			h('dl.meta',
				h('dt', { text: 'Term' }), h('dd', { text: String(m.term) }),
				h('dt', { text: 'Members' }), h('dd', { text: fmtNumber(m.members) }),
				h('dt', { text: 'Persistence' }), h('dd', { text: m.persistence || '—' }),
				h('dt', { text: 'Slow tier' }), h('dd', { text: m.slow_tier || 'none' })));
		clear(countersBody,
			stat('Objects', fmtNumber(m.objects), 'objects'),
			stat('Versions', fmtNumber(m.versions), 'versions'),
			stat('Metadata', fmtBytes(m.metadata_bytes), 'metadata_bytes'),
			stat('Operations', fmtNumber(m.ops), 'ops'),
			stat('Log records', fmtNumber(m.log_records), 'log_records'),
			stat('Global version', fmtNumber(m.global_version), 'global_version'));
		clear(evictBody,
			stat('Evictions', fmtNumber(m.evictions), 'evictions'),
			stat('Expiries', fmtNumber(m.expiries), 'expiries'),
			stat('Evicted', fmtBytes(m.evicted_bytes), 'evicted_bytes'),
			stat('High watermark', m.high_watermark_pct ? `${m.high_watermark_pct}%` : '', 'high_watermark_pct'),
			stat('Low watermark', m.low_watermark_pct ? `${m.low_watermark_pct}%` : '', 'low_watermark_pct'));
	}

	function renderSegments(d) {
		clear(tiersBody, (d.tiers || []).map((t) => h('div.tier', { 'data-tier': t.tier },
			h('div.tier-name', { text: TIER_NAMES[t.tier] || t.tier }),
			usage(t.use, `store-tier-${t.tier}`),
			h('div.muted.tier-text', {
				text: `${fmtBytes(t.used)} of ${fmtBytes(t.size)} · ${t.segments} segment${t.segments === 1 ? '' : 's'}` +
					(t.live !== t.segments ? ` (${t.live} live)` : ''),
			}))));
		const segs = d.segments || [];
		if (!segs.length) {
			clear(segsBody, h('p.muted#store-no-segments', { text: 'No segments in the pool.' }));
			return;
		}
		clear(segsBody, table([
			{ label: 'Segment', get: (s) => String(s.segment), num: true },
			{ label: 'Tier', get: (s) => TIER_NAMES[s.type] || s.type },
			{ label: 'State', get: (s) => h(`span.state.seg-${s.state}`, { text: s.state }) },
			{ label: 'Where', get: (s) => (s.type === 'nvmeof' ? `${s.traddr}:${s.trsvcid} ${s.subnqn}` : `node ${s.node}`) },
			{ label: 'Owner', get: (s) => (s.owner === null || s.owner === undefined ? '—' : `client ${s.owner}`) },
			{ label: 'Size', get: (s) => fmtBytes(s.size), num: true },
			{ label: 'Used', get: (s) => fmtBytes(s.used), num: true },
			{ label: 'Use', get: (s) => usage(s.use, null) },
		], segs, { id: 'store-segments-table', rowAttrs: (s) => ({ 'data-segment': s.segment, 'data-state': s.state }) }));
	}

	function down(e) {
		status.className = 'status-line down';
		status.textContent = e.status === 502 ? 'masters unreachable' : 'store unavailable';
		showError(err, e.message);
		// what an earlier answer showed stays; else say why it is empty
		if (!master) {
			for (const b of [mastersBody, countersBody, evictBody, tiersBody, segsBody]) {
				clear(b, h('span.muted', { text: 'unavailable: no answer from the masters' }));
			}
		}
	}

	async function poll() {
		clearTimeout(timer);
		timer = null;
		// both asked at once; the master's answer (or error) comes first
		const [m, s] = await Promise.allSettled([get('/api/store/master'), get('/api/store/segments')]);
		if (!alive) return;
		if (m.status === 'fulfilled') renderMaster(m.value);
		if (m.status === 'fulfilled' && s.status === 'fulfilled') {
			showError(err, null);
			renderSegments(s.value);
			updated.textContent = `updated ${fmtTime(Date.now())} · every ${POLL_MS / 1000} s`;
		} else {
			const e = m.status === 'rejected' ? m.reason : s.reason;
			if (m.status === 'rejected') down(e);
			else showError(err, e.message);	// the master answered; its segments did not
			if (e.status === 401) return;
		}
		timer = setTimeout(poll, POLL_MS);
	}

	async function listObjects(more) {
		showError(objErr, null);
		if (!more) {
			listed = prefixIn.value;
			objRows = [];
			next = null;
		}
		listBtn.disabled = true;
		moreBtn.disabled = true;
		objBody.dataset.busy = '1';
		try {
			const d = await get(`/api/store/objects${qs({ prefix: listed, after: more ? next : '', limit: PAGE })}`);
			if (!alive) return;
			objRows = objRows.concat(d.objects || []);
			next = d.more ? d.next : null;
			renderObjects();
		} catch (e) {
			if (!alive) return;
			showError(objErr, e.message);
		} finally {
			listBtn.disabled = false;
			moreBtn.disabled = false;
			delete objBody.dataset.busy;
			objBody.dataset.seq = String(Number(objBody.dataset.seq || 0) + 1);
		}
	}

	function renderObjects() {
		moreBtn.hidden = !next;
		if (!objRows.length) {
			clear(objBody, h('p.muted#store-no-objects', { text: listed ? `No objects with prefix "${listed}".` : 'No objects.' }));
			return;
		}
		clear(objBody, table([
			{ label: 'Key', get: (o) => h('span.mono', { text: o.key }) },
			{ label: 'Version', get: (o) => String(o.version), num: true },
			{ label: 'Size', get: (o) => fmtBytes(o.size), num: true },
			{ label: 'DRAM', get: (o) => `${o.replicas}/${o.replicas_wanted}`, num: true },
			{ label: 'NVMe-oF', get: (o) => `${o.nvmeof}/${o.nvmeof_wanted}`, num: true },
			{ label: 'Flush', get: (o) => (o.flushed ? `${o.flush}, flushed` : o.flush) },
			{ label: 'Pinned', get: (o) => (o.soft_pin ? 'yes' : '') },
			{ label: 'Expires', get: (o) => (o.expires ? fmtTime(o.expires) : '') },
			{ label: 'Last used', get: (o) => (o.atime ? fmtTime(o.atime) : '') },
			{ label: 'Created', get: (o) => (o.ctime ? fmtTime(o.ctime) : '') },
		], objRows, { id: 'store-objects-table', rowAttrs: (o) => ({ 'data-key': o.key }) }));
	}

	(async () => {
		try {
			cfg = await get('/api/store');
		} catch (e) {
			if (alive) down(e);
			return;
		}
		if (!alive) return;
		if (!cfg.configured) {
			status.className = 'status-line down';
			status.textContent = 'no object store configured';
			cfgMsg.textContent = cfg.note;
			cfgMsg.hidden = false;
			for (const b of [mastersBody, countersBody, evictBody, tiersBody, segsBody]) {
				clear(b, h('span.muted', { text: 'unavailable: no masters configured' }));
			}
			objForm.hidden = true;
			return;
		}
		if (!cfg.objects) {
			objMsg.textContent = cfg.note;
			objMsg.hidden = false;
			objForm.hidden = true;
		}
		poll();
	})();
	return () => { alive = false; clearTimeout(timer); };
}
