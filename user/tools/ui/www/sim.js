// #/sim: start simulations, follow their progress, chart their results and
// compare runs.
import { get, post, del } from './api.js';
import { h, clear, errorBox, showError, field, fmtNumber, fmtBytes, fmtTime } from './dom.js';
import { Charts, chartBox, color, axisTitle, TIER_COLORS } from './charts.js';

const DEFAULT_SIZES = '1%,2%,5%,10%,20%';
const DEFAULT_LATENCY = 'L1:5,L2:200,L3:800';
const GEN_EXAMPLE = 'zipf:requests=100000,objects=10000,alpha=0.99';
const ACTIVE = new Set(['queued', 'running']);
const POLICY_LABELS = { belady: 'Belady (optimal) line' };

export function mount(view) {
	const charts = new Charts();
	const compareCharts = new Charts();
	let alive = true;
	let pollTimer = null;
	let runs = [];
	let shownRun = null;		// id of the run in the detail panel
	let shownHasResult = false;
	const selected = new Set();	// runs ticked for comparison
	const rows = new Map();		// run id -> row parts

	// ---- the form --------------------------------------------------------
	const nameIn = h('input#sim-name', { placeholder: 'optional', autocomplete: 'off' });
	const srcGen = h('input#sim-src-gen', { type: 'radio', name: 'sim-src', value: 'gen', checked: true });
	const srcTrace = h('input#sim-src-trace', { type: 'radio', name: 'sim-src', value: 'trace' });
	const genIn = h('input#sim-gen', { placeholder: GEN_EXAMPLE, autocomplete: 'off', spellcheck: 'false', testid: 'sim-gen' });
	const traceSel = h('select#sim-trace', { testid: 'sim-trace' }, h('option', { value: '', text: 'no traces available' }));
	const genHelp = h('div.help#sim-gen-help', { text: `Generator spec, e.g. ${GEN_EXAMPLE}` });
	const policiesBox = h('div.checks#sim-policies', { testid: 'sim-policies' }, h('span.muted', { text: 'loading…' }));
	const sizesIn = h('input#sim-sizes', { value: DEFAULT_SIZES, autocomplete: 'off' });
	const tiersIn = h('input#sim-tiers', { placeholder: 'L1:N,L2:N', autocomplete: 'off' });
	const latencyIn = h('input#sim-latency', { value: DEFAULT_LATENCY, autocomplete: 'off' });
	const paramsIn = h('input#sim-params', { placeholder: 'NAME=V,…', autocomplete: 'off' });
	const warmupIn = h('input#sim-warmup', { type: 'number', min: '0', step: '1', placeholder: '0' });
	const windowIn = h('input#sim-window', { type: 'number', min: '1', step: '1', placeholder: 'default' });
	const runBtn = h('button#sim-run.btn.btn-primary', { type: 'submit', text: 'Run simulation' });
	const formErr = errorBox('sim-error');

	genIn.addEventListener('input', () => { srcGen.checked = true; });
	traceSel.addEventListener('change', () => { if (traceSel.value) srcTrace.checked = true; });

	const form = h('form#sim-form.form', { testid: 'sim-form', novalidate: true },
		h('fieldset',
			h('legend', { text: 'Trace' }),
			h('div.src-row', h('label.inline', srcGen, ' Generator'), genIn),
			genHelp,
			h('div.src-row', h('label.inline', srcTrace, ' Trace file'), traceSel)),
		field('Name', nameIn),
		h('fieldset', h('legend', { text: 'Policies' }), policiesBox),
		h('div.row-2',
			field('Sizes', sizesIn, 'comma list: entries, bytes (K/M/G) or % of objects'),
			field('Tiers', tiersIn, 'e.g. L1:1000,L2:10000')),
		h('div.row-2',
			field('Latency', latencyIn, 'ns per tier'),
			field('Params', paramsIn, 'policy parameters')),
		h('div.row-2',
			field('Warmup', warmupIn, 'requests not counted'),
			field('Window', windowIn, 'requests per window')),
		formErr,
		h('div.actions', runBtn));

	// ---- the runs list ---------------------------------------------------
	const compareBtn = h('button#sim-compare.btn', { type: 'button', text: 'Compare selected', disabled: true, testid: 'sim-compare' });
	const runsErr = errorBox('sim-runs-error');
	const runsBody = h('tbody');
	const runsTable = h('table.grid.runs#sim-runs', { testid: 'sim-runs' },
		h('thead', h('tr',
			h('th', { title: 'select for comparison', text: '✓' }),
			h('th.num', { text: '#' }), h('th', { text: 'Name' }), h('th', { text: 'User' }),
			h('th', { text: 'State' }), h('th', { text: 'Progress' }), h('th', { text: 'Created' }),
			h('th', { text: '' }))),
		runsBody);
	const noRuns = h('p.muted#sim-no-runs', { text: 'No runs yet.' });

	// ---- detail and compare panels -----------------------------------------
	const detail = h('section.card#sim-detail', { hidden: true, testid: 'sim-detail' });
	const compareView = h('section.card#sim-compare-view', { hidden: true, testid: 'sim-compare-view' });

	view.append(h('div.page',
		h('div.page-head', h('h1', { text: 'Simulation' }),
			h('p.muted', { text: 'Replay a trace or a generated workload through the cache policies; results are the record of "dsctl -j sim run".' })),
		h('div.cols',
			h('section.card.col-form', h('h2', { text: 'New run' }), form),
			h('section.card.col-main',
				h('div.card-head', h('h2', { text: 'Runs' }), h('div.toolbar', compareBtn)),
				runsErr, noRuns, h('div.table-scroll', runsTable))),
		compareView,
		detail));

	// ---- options ---------------------------------------------------------
	get('/api/sim/options').then((o) => {
		if (!alive) return;
		const policies = (o && o.policies) || [];
		clear(policiesBox, policies.map((p) => h('label.check',
			h('input', { type: 'checkbox', name: 'policy', value: p, checked: p === 'belady', testid: `policy-${p}` }),
			' ', POLICY_LABELS[p] || p)));
		if (!policies.length) clear(policiesBox, h('span.muted', { text: 'the server offers no policies' }));
		const traces = (o && o.traces) || [];
		clear(traceSel, traces.length
			? traces.map((t) => h('option', {
				value: t.source === 'server' ? `server:${t.name}` : `file:${t.id}`,
				text: `${t.name} (${t.source === 'server' ? 'server' : 'upload'}, ${fmtBytes(t.size)}` +
					`${typeof t.requests === 'number' ? `, ${fmtNumber(t.requests)} requests` : ''})`,
			}))
			: [h('option', { value: '', text: 'no traces available' })]);
		if (o && o.generators && o.generators.length) {
			genHelp.textContent = `Generators: ${o.generators.join(', ')} — e.g. ${GEN_EXAMPLE}`;
		}
	}).catch((e) => showError(formErr, `Cannot load the simulation options: ${e.message}`));

	// ---- submit ----------------------------------------------------------
	form.addEventListener('submit', async (ev) => {
		ev.preventDefault();
		showError(formErr, null);
		const req = {};
		if (nameIn.value.trim()) req.name = nameIn.value.trim();
		if (srcGen.checked) {
			const spec = genIn.value.trim();
			if (!spec) return showError(formErr, 'Enter a generator spec, or choose a trace file.');
			req.trace = { gen: spec };
		} else {
			const v = traceSel.value;
			if (!v) return showError(formErr, 'Choose a trace, or enter a generator spec.');
			const i = v.indexOf(':');
			const kind = v.slice(0, i);
			const id = v.slice(i + 1);
			req.trace = kind === 'server' ? { server: id } : { file: /^\d+$/.test(id) ? Number(id) : id };
		}
		req.policies = [...policiesBox.querySelectorAll('input[name=policy]:checked')].map((c) => c.value);
		if (!req.policies.length) return showError(formErr, 'Choose at least one policy.');
		req.sizes = sizesIn.value.split(',').map((s) => s.trim()).filter(Boolean);
		if (!req.sizes.length) return showError(formErr, 'Enter at least one size.');
		if (tiersIn.value.trim()) req.tiers = tiersIn.value.trim();
		if (latencyIn.value.trim()) req.latency = latencyIn.value.trim();
		if (paramsIn.value.trim()) req.params = paramsIn.value.trim();
		if (warmupIn.value.trim() !== '') req.warmup = Number(warmupIn.value);
		if (windowIn.value.trim() !== '') req.window = Number(windowIn.value);
		runBtn.disabled = true;
		try {
			const r = await post('/api/sim/runs', req);
			if (r && r.id !== undefined) showRun(r.id);
			await refreshRuns();
		} catch (e) {
			showError(formErr, e.message);
		} finally {
			runBtn.disabled = false;
		}
	});

	// ---- runs polling ----------------------------------------------------
	// One refresh at a time: a call while one is in flight asks for another
	// right after it.  Then every second while a run is queued or running,
	// every 10 s otherwise (other users' runs).
	let inflight = null;
	let again = false;
	function refreshRuns() {
		if (inflight) {
			again = true;
			return inflight;
		}
		clearTimeout(pollTimer);
		pollTimer = null;
		let stop = false;
		inflight = (async () => {
			try {
				const r = await get('/api/sim/runs');
				if (!alive) return;
				runs = (r && r.runs) || [];
				showError(runsErr, null);
				renderRuns();
			} catch (e) {
				if (!alive) return;
				showError(runsErr, `Cannot list the runs: ${e.message}`);
				if (e.status === 401) stop = true;
			}
		})().finally(() => {
			inflight = null;
			if (!alive || stop) return;
			if (again) {
				again = false;
				refreshRuns();
				return;
			}
			clearTimeout(pollTimer);
			pollTimer = setTimeout(refreshRuns, runs.some((x) => ACTIVE.has(x.state)) ? 1000 : 10000);
		});
		return inflight;
	}

	function makeRow(run) {
		const id = run.id;
		const sel = h('input.run-select', { type: 'checkbox', 'aria-label': `select run ${id} for comparison`, testid: `run-select-${id}` });
		sel.addEventListener('change', () => {
			if (sel.checked) selected.add(id); else selected.delete(id);
			updateCompareBtn();
		});
		const nameBtn = h('button.linklike.run-view', { type: 'button', testid: `run-view-${id}` });
		nameBtn.addEventListener('click', () => showRun(id));
		const state = h('span.state');
		const progress = h('progress.run-progress', { max: 1, value: 0 });
		const pct = h('span.pct');
		const cancel = h('button.btn.btn-small.run-cancel', { type: 'button', text: 'Cancel', testid: `run-cancel-${id}` });
		const delBtn = h('button.btn.btn-small.btn-danger.run-delete', { type: 'button', text: 'Delete', testid: `run-delete-${id}` });
		const rowErr = h('div.error.row-error', { role: 'alert', hidden: true });
		cancel.addEventListener('click', async () => {
			showError(rowErr, null);
			cancel.disabled = true;
			try {
				await post(`/api/sim/runs/${id}/cancel`, {});
			} catch (e) {
				showError(rowErr, `Cancel failed: ${e.message}`);
			}
			cancel.disabled = false;
			refreshRuns();
		});
		delBtn.addEventListener('click', async () => {
			showError(rowErr, null);
			if (!window.confirm(`Delete run #${id}?`)) return;
			try {
				await del(`/api/sim/runs/${id}`);
				selected.delete(id);
				if (shownRun === id) { shownRun = null; detail.hidden = true; charts.destroyAll(); }
				refreshRuns();
			} catch (e) {
				showError(rowErr, `Delete failed: ${e.message}`);
			}
		});
		const created = h('td.time');
		const user = h('td');
		const tr = h('tr', { 'data-run-id': id },
			h('td', sel), h('td.num', { text: id }), h('td', nameBtn), user,
			h('td', state), h('td.progress-cell', progress, pct), created,
			h('td.actions', cancel, ' ', delBtn, rowErr));
		return { tr, sel, nameBtn, state, progress, pct, cancel, created, user };
	}

	function renderRuns() {
		noRuns.hidden = runs.length > 0;
		runsTable.hidden = runs.length === 0;
		const seen = new Set();
		let prev = null;
		for (const run of runs) {
			seen.add(run.id);
			let r = rows.get(run.id);
			if (!r) { r = makeRow(run); rows.set(run.id, r); }
			r.tr.dataset.state = run.state;
			r.tr.classList.toggle('selected', shownRun === run.id);
			r.nameBtn.textContent = run.name || `run ${run.id}`;
			r.nameBtn.title = `Show the results of run #${run.id}${traceText(run.request) ? ` (${traceText(run.request)})` : ''}`;
			r.user.textContent = run.user || '';
			r.state.textContent = run.state;
			r.state.className = `state state-${run.state}`;
			r.state.title = run.error || '';
			const p = run.state === 'done' ? 1 : Math.max(0, Math.min(1, Number(run.progress) || 0));
			r.progress.value = p;
			r.pct.textContent = `${Math.round(p * 100)}%`;
			r.cancel.hidden = !ACTIVE.has(run.state);
			r.created.textContent = fmtTime(run.created);
			r.sel.checked = selected.has(run.id);
			// keep the server's order; move a row only when it is out of place
			const want = prev ? prev.nextSibling : runsBody.firstChild;
			if (want !== r.tr) runsBody.insertBefore(r.tr, want);
			prev = r.tr;
		}
		for (const [id, r] of rows) {
			if (!seen.has(id)) { r.tr.remove(); rows.delete(id); selected.delete(id); }
		}
		updateCompareBtn();
		// follow the run shown in the detail panel
		if (shownRun !== null) {
			const run = runs.find((x) => x.id === shownRun);
			if (!run) return;
			if (!shownHasResult && !ACTIVE.has(run.state)) {
				if (loading !== shownRun) loadRun(shownRun);
			}
			else if (!shownHasResult) renderPending(run);
		}
	}

	function updateCompareBtn() {
		compareBtn.disabled = selected.size < 2;
		compareBtn.textContent = selected.size ? `Compare selected (${selected.size})` : 'Compare selected';
	}

	// ---- one run's results -------------------------------------------------
	function showRun(id) {
		shownRun = id;
		shownHasResult = false;
		for (const [rid, r] of rows) r.tr.classList.toggle('selected', rid === id);
		loadRun(id);
	}

	// Only the latest load counts: an earlier, slower answer (a run still
	// "running") must not replace the finished run's results.
	let loadSeq = 0;
	let loading = null;	// the run whose record is being fetched
	async function loadRun(id) {
		const my = ++loadSeq;
		loading = id;
		let run;
		try {
			run = await get(`/api/sim/runs/${id}`);
		} catch (e) {
			if (my === loadSeq) loading = null;
			if (!alive || shownRun !== id || my !== loadSeq) return;
			charts.destroyAll();
			clear(detail, h('h2', { text: `Run #${id}` }), h('div.error', { role: 'alert', text: e.message }));
			detail.hidden = false;
			return;
		}
		if (my === loadSeq) loading = null;
		if (!alive || shownRun !== id || my !== loadSeq) return;
		if (ACTIVE.has(run.state)) {
			renderPending(run);
			refreshRuns();
			return;
		}
		renderResult(run);
	}

	function detailHead(run) {
		const req = run.request || {};
		return [
			h('div.card-head',
				h('h2#sim-detail-title', { text: `Run #${run.id}: ${run.name || ''}` }),
				h('span', { class: `state state-${run.state}`, id: 'sim-detail-state', text: run.state, testid: 'sim-detail-state' })),
			h('dl.meta',
				h('dt', { text: 'Trace' }), h('dd', { text: traceText(req) || '—' }),
				h('dt', { text: 'Policies' }), h('dd', { text: (req.policies || []).join(', ') || '—' }),
				h('dt', { text: 'Sizes' }), h('dd', { text: (req.sizes || []).join(', ') || '—' }),
				req.tiers ? [h('dt', { text: 'Tiers' }), h('dd', { text: req.tiers })] : null,
				req.latency ? [h('dt', { text: 'Latency' }), h('dd', { text: req.latency })] : null,
				req.params ? [h('dt', { text: 'Params' }), h('dd', { text: req.params })] : null,
				req.warmup !== undefined ? [h('dt', { text: 'Warmup' }), h('dd', { text: String(req.warmup) })] : null,
				h('dt', { text: 'User' }), h('dd', { text: run.user || '' }),
				h('dt', { text: 'Created' }), h('dd', { text: fmtTime(run.created) }),
				run.finished ? [h('dt', { text: 'Finished' }), h('dd', { text: fmtTime(run.finished) })] : null),
		];
	}

	function renderPending(run) {
		if (shownHasResult) return;
		charts.destroyAll();
		const p = Math.max(0, Math.min(1, Number(run.progress) || 0));
		clear(detail, detailHead(run),
			h('div.pending', h('progress#sim-detail-progress', { max: 1, value: p }),
				h('span', { text: ` ${run.state}, ${Math.round(p * 100)}%` })));
		detail.hidden = false;
	}

	function renderResult(run) {
		charts.destroyAll();
		shownHasResult = true;
		const parts = [detailHead(run)];
		if (run.state === 'failed' || run.error) {
			parts.push(h('div.error#sim-run-error', { role: 'alert', text: run.error || 'the run failed' }));
		}
		let result = run.result;
		if (typeof result === 'string') { try { result = JSON.parse(result); } catch { result = null; } }
		const items = (result && Array.isArray(result.runs)) ? result.runs : [];
		if (run.state === 'done' && !items.length) parts.push(h('p.muted', { text: 'The run produced no results.' }));
		if (run.state === 'canceled') parts.push(h('p.muted', { text: 'The run was canceled.' }));
		if (!items.length) {
			clear(detail, parts);
			detail.hidden = false;
			return;
		}
		if (result.trace) {
			const t = result.trace;
			parts.push(h('p.muted.trace-line', { id: 'sim-result-trace',
				text: `Trace ${t.name || ''}: ${fmtNumber(t.requests)} requests, ${fmtNumber(t.objects)} objects` +
					(result.window ? `, window ${fmtNumber(result.window)} requests` : '') }));
		}
		const miss = chartBox('chart-miss', 'Miss ratio vs cache size');
		const tiers = chartBox('chart-tiers', 'Requests served per tier');
		const lat = chartBox('chart-latency', 'Modelled latency (ns)');
		const win = chartBox('chart-windows', 'Miss ratio per window');
		parts.push(h('div.charts', miss.box, tiers.box, lat.box, win.box));
		parts.push(h('h3', { text: 'Results' }), h('div.table-scroll', resultTable(items, 'sim-result-table')));
		clear(detail, parts);
		detail.hidden = false;
		drawMiss(charts, miss.canvas, [{ label: null, items }]);
		drawTiers(tiers.canvas, items);
		drawLatency(lat.canvas, items);
		drawWindows(win.canvas, items);
	}

	function drawTiers(canvas, items) {
		const labels = items.map(itemLabel);
		const names = [];
		for (const it of items) for (const t of it.tiers || []) if (!names.includes(t.tier)) names.push(t.tier);
		charts.draw(canvas, {
			type: 'bar',
			data: {
				labels,
				datasets: names.map((n, i) => ({
					label: n.toUpperCase(),
					backgroundColor: TIER_COLORS[n] || color(i),
					data: items.map((it) => {
						const t = (it.tiers || []).find((x) => x.tier === n);
						return t ? t.served : 0;
					}),
				})),
			},
			options: {
				scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true, title: axisTitle('requests served') } },
				plugins: { tooltip: { callbacks: { afterLabel: (c) => {
					const t = (items[c.dataIndex].tiers || []).find((x) => x.tier === names[c.datasetIndex]);
					return t && t.ratio !== undefined ? `ratio ${fmtNumber(t.ratio)}` : '';
				} } } },
			},
		});
	}

	function drawLatency(canvas, items) {
		charts.draw(canvas, {
			type: 'bar',
			data: {
				labels: items.map(itemLabel),
				datasets: [
					{ label: 'mean', backgroundColor: '#4e79a7', data: items.map((it) => it.mean_ns ?? null) },
					{ label: 'p99', backgroundColor: '#e15759', data: items.map((it) => it.p99_ns ?? null) },
				],
			},
			options: { scales: { y: { beginAtZero: true, title: axisTitle('ns') } } },
		});
	}

	function drawWindows(canvas, items) {
		const withW = items.filter((it) => Array.isArray(it.windows) && it.windows.length);
		const n = Math.max(0, ...withW.map((it) => it.windows.length));
		charts.draw(canvas, {
			type: 'line',
			data: {
				labels: Array.from({ length: n }, (_, i) => i + 1),
				datasets: withW.map((it, i) => ({
					label: itemLabel(it),
					data: it.windows,
					borderColor: color(i),
					backgroundColor: color(i),
					borderDash: it.policy === 'belady' ? [6, 4] : [],
					pointRadius: n > 40 ? 0 : 2,
					borderWidth: 1.5,
				})),
			},
			options: {
				scales: { x: { title: axisTitle('window') }, y: { beginAtZero: true, suggestedMax: 1, title: axisTitle('miss ratio') } },
				plugins: { legend: { display: withW.length <= 12 } },
			},
		});
	}

	// ---- compare -----------------------------------------------------------
	compareBtn.addEventListener('click', async () => {
		const ids = runs.map((r) => r.id).filter((id) => selected.has(id)).sort((x, y) => x - y);
		if (ids.length < 2) return;
		compareBtn.disabled = true;
		compareCharts.destroyAll();
		const err = h('div.error#sim-compare-error', { role: 'alert', hidden: true });
		clear(compareView, h('div.card-head', h('h2', { text: `Comparing runs ${ids.map((i) => `#${i}`).join(', ')}` }),
			h('button#sim-compare-close.btn.btn-small', { type: 'button', text: 'Close', onclick: () => {
				compareCharts.destroyAll(); compareView.hidden = true;
			} })), err, h('p.muted', { text: 'Loading…' }));
		compareView.hidden = false;
		const loaded = [];
		const failed = [];
		await Promise.all(ids.map(async (id) => {
			try { loaded.push(await get(`/api/sim/runs/${id}`)); } catch (e) { failed.push(`#${id}: ${e.message}`); }
		}));
		updateCompareBtn();
		if (!alive) return;
		loaded.sort((a, b) => ids.indexOf(a.id) - ids.indexOf(b.id));
		const series = [];
		const notes = [...failed];
		for (const run of loaded) {
			let result = run.result;
			if (typeof result === 'string') { try { result = JSON.parse(result); } catch { result = null; } }
			const items = result && Array.isArray(result.runs) ? result.runs : [];
			if (!items.length) notes.push(`#${run.id} has no results (${run.state})`);
			else series.push({ run, items, label: `#${run.id} ${run.name || ''}`.trim() });
		}
		const box = chartBox('chart-compare', 'Miss ratio vs cache size');
		clear(compareView,
			compareView.firstChild,
			err,
			series.length ? box.box : null,
			h('div.compare-tables#sim-compare-tables', series.map((s) => h('section.compare-col', { 'data-run-id': s.run.id },
				h('h3', { text: s.label }),
				h('div.table-scroll', resultTable(s.items, `sim-compare-table-${s.run.id}`, true))))));
		showError(err, notes.length ? notes.join('; ') : null);
		if (series.length) drawMiss(compareCharts, box.canvas, series);
		compareView.scrollIntoView({ block: 'start' });
	});

	refreshRuns();

	return () => {
		alive = false;
		clearTimeout(pollTimer);
		charts.destroyAll();
		compareCharts.destroyAll();
	};
}

// ---- shared helpers ------------------------------------------------------

function traceText(req) {
	const t = req && req.trace;
	if (!t) return '';
	if (t.gen) return `generator ${t.gen}`;
	if (t.file !== undefined) return `uploaded file ${t.file}`;
	if (t.server) return `server trace ${t.server}`;
	return JSON.stringify(t);
}

function sizeText(it) {
	if (it.unit === 'bytes') return fmtBytes(it.size);
	return `${fmtNumber(it.size)}${it.unit && it.unit !== 'entries' ? ` ${it.unit}` : ''}`;
}

function itemLabel(it) { return `${it.policy} @ ${sizeText(it)}`; }

function resultTable(items, id, compact) {
	const cols = [
		['Policy', (it) => it.policy],
		['Size', (it) => sizeText(it), true],
		['Miss ratio', (it) => fmtNumber(it.miss_ratio), true],
		['Hit ratio', (it) => fmtNumber(it.hit_ratio), true],
	];
	if (!compact) {
		if (items.some((it) => it.byte_miss_ratio !== undefined)) cols.push(['Byte miss ratio', (it) => fmtNumber(it.byte_miss_ratio), true]);
		for (const t of ['l1', 'l2', 'l3']) {
			if (items.some((it) => (it.tiers || []).some((x) => x.tier === t))) {
				cols.push([`${t.toUpperCase()} served`, (it) => {
					const x = (it.tiers || []).find((y) => y.tier === t);
					return x ? fmtNumber(x.served) : '';
				}, true]);
			}
		}
	}
	cols.push(['Mean ns', (it) => fmtNumber(it.mean_ns, 1), true], ['p99 ns', (it) => fmtNumber(it.p99_ns, 1), true]);
	return h('table.grid.results', { id, testid: id },
		h('thead', h('tr', cols.map(([l, , num]) => h('th', { class: num ? 'num' : null, text: l })))),
		h('tbody', items.map((it) => h('tr', { 'data-policy': it.policy, 'data-size': it.size },
			cols.map(([, get, num]) => h('td', { class: num ? 'num' : null, text: get(it) ?? '' }))))));
}

// Miss ratio against size: one line per (series, policy); Belady dashed.
function drawMiss(charts, canvas, series) {
	const datasets = [];
	let unit = null;
	let lo = Infinity;
	let hi = 0;
	series.forEach((s, si) => {
		const policies = [];
		for (const it of s.items) if (!policies.includes(it.policy)) policies.push(it.policy);
		policies.forEach((p, pi) => {
			const pts = s.items.filter((it) => it.policy === p && typeof it.size === 'number')
				.map((it) => ({ x: it.size, y: it.miss_ratio }))
				.sort((a, b) => a.x - b.x);
			for (const it of s.items) if (it.policy === p && !unit) unit = it.unit;
			for (const pt of pts) { lo = Math.min(lo, pt.x); hi = Math.max(hi, pt.x); }
			const belady = p === 'belady';
			const c = series.length > 1 ? color(si) : (belady ? '#222222' : color(pi));
			const dashes = series.length > 1 ? [[], [6, 4], [2, 3], [10, 3, 2, 3]] : [[]];
			datasets.push({
				label: s.label ? `${s.label} · ${p}` : (belady ? 'Belady (optimal)' : p),
				data: pts,
				borderColor: c,
				backgroundColor: c,
				borderDash: belady ? [6, 4] : dashes[pi % dashes.length],
				borderWidth: belady ? 2 : 1.8,
				pointRadius: 3,
				tension: 0,
			});
		});
	});
	const logX = lo > 0 && hi / lo >= 20;
	charts.draw(canvas, {
		type: 'line',
		data: { datasets },
		options: {
			parsing: true,
			scales: {
				x: { type: logX ? 'logarithmic' : 'linear', title: axisTitle(`cache size (${unit || 'entries'})`) },
				y: { beginAtZero: true, suggestedMax: 1, title: axisTitle('miss ratio') },
			},
			plugins: { tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${fmtNumber(c.parsed.y)} at ${fmtNumber(c.parsed.x)}` } } },
		},
	});
}
