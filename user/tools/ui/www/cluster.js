// #/cluster: the live cluster view (nodes, peers, segments, the token cache,
// Slope's ranges and migrations), refreshed every 2 s; admins can change
// the cache's parameters.  The cache is charted over the last minutes
// (rates from the differences of its counters between refreshes); its
// raw counters are behind a disclosure.  Every table scrolls inside its
// card rather than spill past it.
import { get, post, isAdmin } from './api.js';
import { h, clear, errorBox, showError, field, renderValue, table, fmtNumber, fmtTime } from './dom.js';
import { Charts, chartBox, TIER_COLORS, color, axisTitle } from './charts.js';

const POLL_MS = 2000;
// the parameters "dsctl cache set" knows, for when the module is not loaded
const KNOWN_PARAMS = ['l1_capacity', 'l2_capacity', 'promote_l2', 'promote_l1', 'window', 'l1_idle',
	'l2_idle', 'aging', 'batch_threshold', 'batch_max', 'queue_max', 'cas_retries', 'prefetch',
	'cost_l1', 'cost_l2', 'cost_l3', 'mode', 'migrate_budget', 'adapt_interval', 'sample', 'optimistic'];
const SECTIONS = [
	['nodes', 'Nodes'],
	['peers', 'Peers'],
	['segments', 'Segments'],
	['cache', 'Token cache'],
];
const HISTORY = 90;	// points a chart keeps: 3 minutes at POLL_MS
const TIERS = ['l1', 'l2', 'l3'];

export function mount(view) {
	let alive = true;
	let timer = null;
	let lastJson = null;
	let params = {};	// name -> current value, from the cache record
	const charts = new Charts();
	const cacheCharts = cacheView();

	const status = h('div#cluster-status.status-line', { testid: 'cluster-status' });
	const moduleMsg = h('div#cluster-module-msg.notice.warn', { role: 'status', hidden: true, testid: 'cluster-module-msg' });
	const err = errorBox('cluster-error');
	const updated = h('span#cluster-updated.muted');
	const sections = {};
	for (const [key, title] of SECTIONS) {
		sections[key] = { body: h(`div.section-body.table-scroll#cluster-${key}-body`), count: h('span.muted.count') };
		sections[key].el = h(`section.card#cluster-${key}`, { testid: `cluster-${key}` },
			h('div.card-head', h('h2', { text: title }), sections[key].count),
			key === 'cache' ? cacheCharts.el : null, sections[key].body);
	}
	// the cache's record is drawn by cacheView, not as a table
	sections.cache.body.classList.remove('table-scroll');
	const other = h('section.card#cluster-other', { hidden: true });
	let lastSlope = null;
	const slopeBody = h('div.section-body.table-scroll#cluster-slope-body');
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
		if (key === 'cache') {
			clear(s.body, cacheCharts.raw(value));
			return;
		}
		clear(s.body, renderValue(value));
		s.count.textContent = Array.isArray(value) ? `${value.length}` : '';
	}

	// ---- the token cache: figures, charts, and the raw record -------------
	function cacheView() {
		const stats = h('div.stats#cluster-cache-stats');
		const tiersBody = h('div.table-scroll#cluster-cache-tiers');
		const labels = [];	// the time of each point, shared by every chart
		const defs = [];	// { id, title, box, canvas, sets: [{label, value(cur, prev, dt)}], when(cache) }
		let prev = null;	// the previous sample: { t, cache }
		const tier = (c, name) => (c.tiers || []).find((x) => x.tier === name);
		const rate = (cur, old, dt, name, k) => {
			const a = tier(cur, name), b = old && tier(old, name);
			return a && b && typeof a[k] === 'number' ? Math.max(0, (a[k] - b[k]) / dt) : null;
		};
		const sumRate = (k) => (cur, old, dt) => {
			const r = TIERS.map((n) => rate(cur, old, dt, n, k)).filter((x) => x !== null);
			return r.length ? r.reduce((a, b) => a + b, 0) : null;
		};
		const mig = (k) => (cur) => (cur.migration && typeof cur.migration[k] === 'number' ? cur.migration[k] : null);
		const always = () => true;
		const hasMig = (c) => c && c.migration && typeof c.migration === 'object';
		function def(id, title, y, sets, when = always) {
			const { box, canvas } = chartBox(id, title);
			defs.push({ id, title, y, box, canvas, sets, when, chart: null });
		}
		def('chart-cache-hits', 'Hits per second, per tier', 'hits/s',
			TIERS.map((n) => ({ label: n.toUpperCase(), color: TIER_COLORS[n], value: (c, o, dt) => rate(c, o, dt, n, 'hits') })));
		def('chart-cache-moves', 'Promotions, demotions and evictions per second', 'per s', [
			{ label: 'promotions', color: color(0), value: sumRate('promotions') },
			{ label: 'demotions', color: color(3), value: sumRate('demotions') },
			{ label: 'evictions', color: color(1), value: sumRate('evictions') },
		]);
		def('chart-cache-cost', 'Modelled cost of an access, per tier (mean)', 'ns',
			TIERS.map((n) => ({ label: n.toUpperCase(), color: TIER_COLORS[n], value: (c) => (tier(c, n) ? tier(c, n).cost_mean_ns : null) })));
		def('chart-mig-rate', 'Migrations per second', 'per s',
			[{ label: 'migrations', color: color(4), value: mig('per_sec') }], hasMig);
		def('chart-mig-latency', 'Migration latency', 'ns', [
			{ label: 'mean', color: color(0), value: mig('latency_mean_ns') },
			{ label: 'p99', color: color(1), value: mig('latency_p99_ns'), dash: [6, 4] },
		], hasMig);
		def('chart-mig-dma', 'DMA bandwidth', 'bytes/s', [
			{ label: 'DMA', color: color(2), value: mig('dma_bytes_per_sec') },
			{ label: 'of it prefetch', color: color(7), value: mig('dma_prefetch_bytes_per_sec'), dash: [6, 4] },
		], hasMig);
		const grid = h('div.charts#cluster-cache-charts', defs.map((d) => d.box));
		const el = h('div#cluster-cache-view', stats, tiersBody, grid);

		function ensure(d) {
			if (d.chart || !window.Chart) return d.chart;
			d.chart = charts.draw(d.canvas, {
				type: 'line',
				data: {
					labels,
					datasets: d.sets.map((x) => ({
						label: x.label, data: [], borderColor: x.color, backgroundColor: x.color,
						borderDash: x.dash || [], pointRadius: 0, borderWidth: 2, spanGaps: true, tension: 0.2,
					})),
				},
				options: {
					scales: {
						x: { ticks: { maxTicksLimit: 8, autoSkip: true } },
						y: { beginAtZero: true, title: axisTitle(d.y), ticks: { callback: (v) => fmtNumber(v) } },
					},
				},
			});
			return d.chart;
		}

		function stat(key, label, value) {
			return h('div.stat', { 'data-key': key },
				h('div.stat-value', { text: value === null || value === undefined ? '—' : String(value) }),
				h('div.stat-label', { text: label }));
		}

		// One refresh's cache record: the figures now, and a point on each chart.
		function add(cache, t) {
			const mode = Array.isArray(cache.params) ? (cache.params.find((p) => p.name === 'mode') || {}).value : undefined;
			clear(stats,
				stat('entries', 'tokens', fmtNumber(cache.entries)),
				stat('pinned', 'pinned', fmtNumber(cache.pinned)),
				stat('queued', 'queued', fmtNumber(cache.queued)),
				stat('migrations_per_sec', 'migrations/s', fmtNumber(hasMig(cache) ? cache.migration.per_sec : cache.migrations_per_sec)),
				mode !== undefined ? stat('mode', 'mode', mode) : null);
			clear(tiersBody, table([
				{ label: 'Tier', get: (x) => x.tier.toUpperCase() },
				{ label: 'Entries', get: (x) => fmtNumber(x.entries), num: true },
				{ label: 'Capacity', get: (x) => (x.capacity === null ? 'unbounded' : fmtNumber(x.capacity)), num: true },
				{ label: 'Hit ratio', get: (x) => (typeof x.hit_ratio === 'number' ? `${(x.hit_ratio * 100).toFixed(1)}%` : '—'), num: true },
				{ label: 'Hits', get: (x) => fmtNumber(x.hits), num: true },
				{ label: 'Misses', get: (x) => fmtNumber(x.misses), num: true },
				{ label: 'Promotions', get: (x) => fmtNumber(x.promotions), num: true },
				{ label: 'Demotions', get: (x) => fmtNumber(x.demotions), num: true },
				{ label: 'Evictions', get: (x) => fmtNumber(x.evictions), num: true },
				{ label: 'Cost mean / p99', get: (x) => `${fmtNumber(x.cost_mean_ns)} / ${fmtNumber(x.cost_p99_ns)} ns`, num: true },
			], cache.tiers || [], { id: 'cluster-cache-tier-table', rowAttrs: (x) => ({ 'data-tier': x.tier }) }));
			const old = prev;
			prev = { t, cache };
			// every chart gets every point (Chart.js may load after the page)
			if (!old || !window.Chart) return;
			const dt = (t - old.t) / 1000;
			if (!(dt > 0)) return;
			labels.push(new Date(t).toLocaleTimeString());
			const drop = labels.length > HISTORY;
			if (drop) labels.shift();
			for (const d of defs) {
				const on = d.when(cache);
				d.box.hidden = !on;
				const c = ensure(d);
				if (!c) continue;
				d.sets.forEach((x, i) => {
					const data = c.data.datasets[i].data;
					data.push(on ? x.value(cache, old.cache, dt) : null);
					if (drop) data.shift();
				});
				if (on) c.update('none');
			}
		}

		function reset() { prev = null; }

		// Everything the record holds, as it is, behind a closed disclosure.
		function raw(cache) {
			if (!cache || typeof cache !== 'object') return renderValue(cache);
			const n = cache.counters ? Object.keys(cache.counters).length : 0;
			const { tiers, ...rest } = cache;
			return h('details#cluster-cache-raw', { testid: 'cluster-cache-raw' },
				h('summary', { text: `Raw counters and parameters (${n} counters)` }),
				h('div.table-scroll', renderValue(rest)));
		}

		for (const d of defs) d.box.hidden = !d.when(null);
		return { el, add, reset, raw };
	}

	function render(d) {
		const loaded = d.module === true;
		status.className = `status-line ${loaded ? 'up' : 'down'}`;
		status.textContent = loaded ? 'dsmem module loaded' : 'dsmem module not loaded';
		moduleMsg.hidden = loaded;
		cacheCharts.el.hidden = !loaded;
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
			if (d && d.module && d.cache && typeof d.cache === 'object') cacheCharts.add(d.cache, Date.now());
			else cacheCharts.reset();
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
	return () => { alive = false; clearTimeout(timer); charts.destroyAll(); };
}

// "1000" -> 1000; "10ms", "adaptive" stay strings
function typed(v) {
	return /^\d+$/.test(v) && Number.isSafeInteger(Number(v)) ? Number(v) : v;
}
