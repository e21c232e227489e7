// #/cluster: the live cluster view (nodes, peers, segments, the token cache,
// Slope's ranges and migrations), refreshed every 2 s; admins can change
// the cache's parameters.
import { get, post, isAdmin } from './api.js';
import { h, clear, errorBox, showError, field, renderValue, table, fmtNumber, fmtTime } from './dom.js';

const POLL_MS = 2000;
// the parameters "dsctl cache set" knows, for when the module is not loaded
const KNOWN_PARAMS = ['l1_capacity', 'l2_capacity', 'promote_l2', 'promote_l1', 'window', 'l1_idle',
	'l2_idle', 'aging', 'batch_threshold', 'batch_max', 'queue_max', 'cas_retries', 'prefetch',
	'cost_l1', 'cost_l2', 'cost_l3', 'mode', 'migrate_budget', 'adapt_interval'];
const SECTIONS = [
	['nodes', 'Nodes'],
	['peers', 'Peers'],
	['segments', 'Segments'],
	['cache', 'Token cache'],
];

export function mount(view) {
	let alive = true;
	let timer = null;
	let lastJson = null;
	let params = {};	// name -> current value, from the cache record

	const status = h('div#cluster-status.status-line', { testid: 'cluster-status' });
	const moduleMsg = h('div#cluster-module-msg.notice.warn', { role: 'status', hidden: true, testid: 'cluster-module-msg' });
	const err = errorBox('cluster-error');
	const updated = h('span#cluster-updated.muted');
	const sections = {};
	for (const [key, title] of SECTIONS) {
		sections[key] = { body: h(`div.section-body#cluster-${key}-body`), count: h('span.muted.count') };
		sections[key].el = h(`section.card#cluster-${key}`, { testid: `cluster-${key}` },
			h('div.card-head', h('h2', { text: title }), sections[key].count), sections[key].body);
	}
	const other = h('section.card#cluster-other', { hidden: true });
	let lastSlope = null;
	const slopeBody = h('div.section-body#cluster-slope-body');
	const slope = h('section.card#cluster-slope', { testid: 'cluster-slope' },
		h('div.card-head', h('h2', { text: 'Slope' })), slopeBody);
	const btrees = h('section.card#cluster-btrees', { testid: 'cluster-btrees' },
		h('div.card-head', h('h2', { text: 'B+trees' })),
		h('p.muted#cluster-btrees-note', {
			text: 'The module keeps no list of B+trees: a tree lives in segments and is named by the address of its ' +
				'first one, and opening it takes a client slot in it. Look one up with ' +
				'"dsctl btree show node N tree ADDR".',
		}));

	// ---- the admin form --------------------------------------------------
	let form = null;
	let paramSel = null;
	let current = null;
	if (isAdmin()) {
		paramSel = h('select#cache-param', { testid: 'cache-param' });
		const valueIn = h('input#cache-value', { placeholder: 'value, e.g. 1000, 10ms, adaptive', autocomplete: 'off', testid: 'cache-value' });
		current = h('span#cache-current.muted');
		const listIn = h('input#cache-list', { placeholder: 'or several: name=value,name=value', autocomplete: 'off', testid: 'cache-list' });
		const apply = h('button#cache-apply.btn.btn-primary', { type: 'submit', text: 'Apply' });
		const ferr = errorBox('cache-error');
		const ok = h('div#cache-ok.notice.ok', { role: 'status', hidden: true });
		form = h('form#cache-form.form', { testid: 'cache-form', novalidate: true },
			h('div.filter-row',
				field('Parameter', paramSel, current),
				field('Value', valueIn),
				field('Or a list', listIn, 'name=value pairs, comma separated')),
			ferr, ok,
			h('div.actions', apply));
		paramSel.addEventListener('change', showCurrent);
		form.addEventListener('submit', async (ev) => {
			ev.preventDefault();
			showError(ferr, null);
			ok.hidden = true;
			const change = {};
			try {
				if (listIn.value.trim()) {
					for (const pair of listIn.value.split(',').map((s) => s.trim()).filter(Boolean)) {
						const i = pair.indexOf('=');
						if (i <= 0) throw new Error(`"${pair}" is not name=value`);
						change[pair.slice(0, i).trim()] = typed(pair.slice(i + 1).trim());
					}
				} else {
					if (!paramSel.value) throw new Error('Choose a parameter.');
					if (!valueIn.value.trim()) throw new Error('Enter a value.');
					change[paramSel.value] = typed(valueIn.value.trim());
				}
			} catch (e) {
				showError(ferr, e.message);
				return;
			}
			apply.disabled = true;
			try {
				const cache = await post('/api/cluster/cache', { params: change });
				ok.textContent = `Set ${Object.entries(change).map(([k, v]) => `${k}=${v}`).join(', ')}.`;
				ok.hidden = false;
				listIn.value = '';
				valueIn.value = '';
				if (cache && typeof cache === 'object') {
					lastJson = null;
					setParams(cache);
					renderSection('cache', cache.cache && typeof cache.cache === 'object' ? cache.cache : cache);
				}
				poll();
			} catch (e) {
				showError(ferr, e.message);
			} finally {
				apply.disabled = false;
			}
		});
		fillParams(KNOWN_PARAMS);
	}

	view.append(h('div.page',
		h('div.page-head', h('h1', { text: 'Cluster' }), h('div.toolbar', updated)),
		status, moduleMsg, err,
		form ? h('section.card#cluster-admin', h('h2', { text: 'Change cache parameters' }), form) : null,
		h('div.cluster-grid', SECTIONS.map(([k]) => sections[k].el)),
		slope, btrees,
		other));

	function fillParams(names) {
		if (!paramSel) return;
		const keep = paramSel.value;
		const have = [...paramSel.options].map((o) => o.value);
		if (have.length === names.length && have.every((n, i) => n === names[i])) return;
		clear(paramSel, names.map((n) => h('option', { value: n, text: n })));
		if (names.includes(keep)) paramSel.value = keep;
		showCurrent();
	}

	function showCurrent() {
		if (!current) return;
		const v = params[paramSel.value];
		current.textContent = v === undefined ? '' : `current: ${typeof v === 'object' ? JSON.stringify(v) : v}`;
	}

	// The cache record's params: an array of {name, value, unit, ...} (as
	// dsctl -j prints it) or an object of name -> value.
	function setParams(cache) {
		const p = cache && cache.params;
		const next = {};
		if (Array.isArray(p)) {
			for (const x of p) {
				if (x && typeof x === 'object' && x.name !== undefined) {
					next[x.name] = x.unit && x.value !== undefined ? `${x.value} ${x.unit}` : x.value;
				}
			}
		} else if (p && typeof p === 'object') {
			Object.assign(next, p);
		}
		params = next;
		const names = Object.keys(next);
		fillParams(names.length ? names : KNOWN_PARAMS);
	}

	function renderSection(key, value) {
		const s = sections[key];
		clear(s.body, renderValue(value));
		s.count.textContent = Array.isArray(value) ? `${value.length}` : '';
	}

	function render(d) {
		const loaded = d.module === true;
		status.className = `status-line ${loaded ? 'up' : 'down'}`;
		status.textContent = loaded ? 'dsmem module loaded' : 'dsmem module not loaded';
		moduleMsg.hidden = loaded;
		if (!loaded) moduleMsg.textContent = d.error || 'The dsmem module is not loaded on this host.';
		for (const [k] of SECTIONS) {
			if (!loaded && (d[k] === undefined || (Array.isArray(d[k]) && !d[k].length) ||
			    (d[k] && typeof d[k] === 'object' && !Array.isArray(d[k]) && !Object.keys(d[k]).length))) {
				clear(sections[k].body, h('span.muted', { text: 'unavailable: the module is not loaded' }));
				sections[k].count.textContent = '';
			} else {
				renderSection(k, d[k]);
			}
		}
		setParams(d.cache);
		const rest = Object.keys(d).filter((k) => !['module', 'error', ...SECTIONS.map(([x]) => x)].includes(k));
		other.hidden = rest.length === 0;
		if (rest.length) {
			const o = {};
			for (const k of rest) o[k] = d[k];
			clear(other, h('h2', { text: 'Other' }), renderValue(o));
		}
	}

	// Each node's part of the Slope range, and the migrations at each end.
	function renderSlope(d) {
		if (!d.module) {
			clear(slopeBody, h('span.muted#cluster-slope-msg', { text: `unavailable: ${d.error || 'the module is not loaded'}` }));
			return;
		}
		const nodes = d.nodes || [];
		const migs = d.migrations || [];
		clear(slopeBody,
			h('h3', { text: 'Ranges' }),
			nodes.length ? table([
				{ label: 'Node', get: (n) => String(n.node), num: true },
				{ label: 'Pages', get: (n) => fmtNumber(n.pages), num: true },
				{ label: 'Leases held', get: (n) => String(n.leases_held), num: true },
				{ label: 'Leases free', get: (n) => String(n.leases_free), num: true },
				{ label: 'Objects', get: (n) => fmtNumber(n.objects), num: true },
				{ label: 'Object pages', get: (n) => fmtNumber(n.object_pages), num: true },
				{ label: 'Migrations', get: (n) => String(n.migrations), num: true },
			], nodes, { id: 'cluster-slope-nodes', rowAttrs: (n) => ({ 'data-node': n.node }) })
				: h('p.muted#cluster-slope-nodes', { text: 'No node has a part of the Slope range.' }),
			h('h3', { text: 'Migrations' }),
			migs.length ? table([
				{ label: 'Node', get: (m) => String(m.node), num: true },
				{ label: 'Id', get: (m) => String(m.id), num: true },
				{ label: 'Direction', get: (m) => (m.direction === 'in' ? `in from ${m.peer ?? '?'}` : `out to ${m.peer ?? '?'}`) },
				{ label: 'State', get: (m) => h(`span.state.mig-${m.state}`, { text: m.state }) },
				{ label: 'Progress', get: (m) => progress(m.progress) },
				{ label: 'Pages', get: (m) => fmtNumber(m.pages), num: true },
				{ label: 'Rounds', get: (m) => String(m.rounds), num: true },
				{ label: 'Pulled', get: (m) => `${fmtNumber(m.pulled)}/${fmtNumber(m.dirty)}`, num: true },
				{ label: 'Time', get: (m) => `${(m.total_ns / 1e6).toFixed(1)} ms`, num: true },
				{ label: 'Error', get: (m) => m.error || '' },
			], migs, { id: 'cluster-slope-migs', rowAttrs: (m) => ({ 'data-state': m.state }) })
				: h('p.muted#cluster-slope-migs', { text: 'No migrations.' }));
	}

	function progress(p) {
		if (typeof p !== 'number') return h('span.muted', { text: '—' });
		return h('span.usage', h('meter', { min: 0, max: 1, value: p, optimum: 1 }),
			h('span.pct', { text: `${(p * 100).toFixed(0)}%` }));
	}

	async function poll() {
		clearTimeout(timer);
		timer = null;
		try {
			const [d, sl] = await Promise.all([get('/api/cluster'),
				get('/api/cluster/slope').catch((e) => ({ module: false, error: e.message }))]);
			if (!alive) return;
			showError(err, null);
			const json = JSON.stringify(d);
			if (json !== lastJson) {
				lastJson = json;
				render(d || {});
			}
			const sj = JSON.stringify(sl);
			if (sj !== lastSlope) {
				lastSlope = sj;
				renderSlope(sl || {});
			}
			updated.textContent = `updated ${fmtTime(Date.now())} · every ${POLL_MS / 1000} s`;
		} catch (e) {
			if (!alive) return;
			showError(err, `Cannot read the cluster state: ${e.message}`);
			if (e.status === 401) return;
		}
		if (alive) timer = setTimeout(poll, POLL_MS);
	}

	poll();
	return () => { alive = false; clearTimeout(timer); };
}

// "1000" -> 1000; "10ms", "adaptive" stay strings
function typed(v) {
	return /^\d+$/.test(v) && Number.isSafeInteger(Number(v)) ? Number(v) : v;
}
