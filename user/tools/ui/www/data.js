// #/data: upload traces, convert, sample, filter and analyze them.
import { get, post, del, api } from './api.js';
import { h, clear, errorBox, showError, field, fmtNumber, fmtBytes, fmtTime } from './dom.js';
import { Charts, chartBox, axisTitle } from './charts.js';

const CONVERT_TO = ['oracleGeneral', 'csv', 'text'];

export function mount(view) {
	let alive = true;
	let files = [];
	let highlight = null;	// id of a file just created
	const charts = new Charts();

	// ---- upload ----------------------------------------------------------
	const fileIn = h('input#data-file', { type: 'file', name: 'file', testid: 'data-file' });
	const formatSel = h('select#data-format', { name: 'format' }, h('option', { value: '', text: 'detect' }));
	const csvIn = h('input#data-csv', { name: 'csv', placeholder: 'id=N[,time=N][,size=N][,op=N][,header][,sep=C]', autocomplete: 'off' });
	const uploadBtn = h('button#data-upload.btn.btn-primary', { type: 'submit', text: 'Upload' });
	const uploadErr = errorBox('data-upload-error');
	const uploadForm = h('form#data-upload-form.form', { testid: 'data-upload-form', novalidate: true },
		h('div.filter-row',
			field('Trace file', fileIn),
			field('Format', formatSel),
			field('CSV map', csvIn, 'only for CSV traces')),
		uploadErr,
		h('div.actions', uploadBtn));

	// ---- files -----------------------------------------------------------
	const msg = h('div#data-msg.notice.ok', { role: 'status', hidden: true });
	const listErr = errorBox('data-files-error');
	const tbody = h('tbody');
	const filesTable = h('table.grid#data-files', { testid: 'data-files' },
		h('thead', h('tr', h('th.num', { text: '#' }), h('th', { text: 'Name' }), h('th', { text: 'Format' }),
			h('th.num', { text: 'Size' }), h('th.num', { text: 'Requests' }), h('th.num', { text: 'Objects' }),
			h('th', { text: 'Origin' }), h('th', { text: 'Actions' }))),
		tbody);
	const noFiles = h('p.muted#data-no-files', { text: 'No files yet: upload a trace above.' });
	const analyzeView = h('section.card#data-analyze', { hidden: true, testid: 'data-analyze' });

	view.append(h('div.page',
		h('div.page-head', h('h1', { text: 'Data' }),
			h('p.muted', { text: 'Traces are parsed when uploaded; conversions, samples and filters make new files.' })),
		h('section.card', h('h2', { text: 'Upload a trace' }), uploadForm),
		h('section.card', h('h2', { text: 'Files' }), msg, listErr, noFiles, h('div.table-scroll', filesTable)),
		analyzeView));

	get('/api/sim/options').then((o) => {
		if (!alive || !o || !Array.isArray(o.formats)) return;
		for (const f of o.formats) formatSel.append(h('option', { value: f, text: f }));
	}).catch(() => {
		for (const f of ['oracleGeneral', 'csv', 'text', 'dsmem']) formatSel.append(h('option', { value: f, text: f }));
	});

	function note(text) {
		msg.textContent = text;
		msg.hidden = !text;
	}

	async function refresh() {
		try {
			const r = await get('/api/data/files');
			if (!alive) return;
			files = (r && r.files) || [];
			showError(listErr, null);
			render();
		} catch (e) {
			if (alive) showError(listErr, `Cannot list the files: ${e.message}`);
		}
	}

	function render() {
		noFiles.hidden = files.length > 0;
		filesTable.hidden = files.length === 0;
		clear(tbody, files.map(fileRow));
	}

	function fileRow(f) {
		const act = (cls, text, fn) => h(`button.btn.btn-small.${cls}`, { type: 'button', text, onclick: fn, testid: `${cls}-${f.id}` });
		const tr = h('tr.file-row', { 'data-file-id': f.id, 'data-name': f.name, class: highlight === f.id ? 'fresh' : null },
			h('td.num', { text: f.id }),
			h('td.name', { text: f.name }),
			h('td', { text: f.format || '' }),
			h('td.num', { text: fmtBytes(f.size), title: `${f.size} bytes` }),
			h('td.num', { text: fmtNumber(f.requests) }),
			h('td.num', { text: fmtNumber(f.objects) }),
			h('td.origin', { text: [f.origin, f.user ? `by ${f.user}` : null, f.created ? fmtTime(f.created) : null].filter(Boolean).join(', '),
				title: f.csv ? `CSV map ${f.csv}` : '' }),
			h('td.actions',
				h('a.btn.btn-small.file-download', { href: `/api/data/files/${encodeURIComponent(f.id)}/download`, download: f.name, text: 'Download', testid: `file-download-${f.id}` }),
				act('file-convert', 'Convert', () => openAction(tr, f, 'convert')),
				act('file-sample', 'Sample', () => openAction(tr, f, 'sample')),
				act('file-filter', 'Filter', () => openAction(tr, f, 'filter')),
				act('file-analyze', 'Analyze', () => analyze(f)),
				act('file-delete', 'Delete', () => remove(tr, f))));
		return tr;
	}

	// One inline form under a file's row for convert, sample or filter.
	function openAction(tr, f, kind) {
		const old = tbody.querySelector('tr.file-action-row');
		const same = old && old.dataset.kind === kind && old.dataset.fileId === String(f.id);
		if (old) old.remove();
		if (same) return;
		const err = errorBox('file-action-error');
		const apply = h('button#file-action-apply.btn.btn-primary.btn-small', { type: 'submit', text: 'Apply' });
		const cancel = h('button#file-action-cancel.btn.btn-small', { type: 'button', text: 'Cancel' });
		let controls;
		let body;
		if (kind === 'convert') {
			const to = h('select#file-convert-to', CONVERT_TO.filter((x) => x !== f.format).map((x) => h('option', { value: x, text: x })));
			controls = [field('Convert to', to)];
			body = () => ({ to: to.value });
		} else if (kind === 'sample') {
			const rate = h('input#file-sample-rate', { type: 'number', min: '0', max: '1', step: 'any', value: '0.1' });
			controls = [field('Sampling rate', rate, 'SHARDS: 0 < rate ≤ 1')];
			body = () => {
				const r = Number(rate.value);
				if (!rate.value || Number.isNaN(r)) throw new Error('Enter a sampling rate, e.g. 0.1');
				return { rate: r };
			};
		} else {
			const from = h('input#file-filter-from', { type: 'number', min: '0', step: '1', placeholder: 'first request' });
			const to = h('input#file-filter-to', { type: 'number', min: '0', step: '1', placeholder: 'end' });
			const op = h('select#file-filter-op', h('option', { value: '', text: 'all requests' }),
				h('option', { value: 'read', text: 'reads only' }), h('option', { value: 'write', text: 'writes only' }));
			controls = [field('From request', from), field('To request (excluded)', to), field('Operation', op)];
			body = () => {
				const b = {};
				if (from.value !== '') b.from = Number(from.value);
				if (to.value !== '') b.to = Number(to.value);
				if (op.value) b.op = op.value;
				return b;
			};
		}
		const titles = { convert: 'Convert', sample: 'Sample', filter: 'Filter' };
		const form = h('form#file-action-form.inline-form', { testid: 'file-action-form', novalidate: true },
			h('strong', { text: `${titles[kind]} ${f.name}` }), controls, h('div.actions', apply, cancel), err);
		const row = h('tr.file-action-row', { 'data-kind': kind, 'data-file-id': f.id }, h('td', { colspan: 8 }, form));
		tr.after(row);
		cancel.addEventListener('click', () => row.remove());
		form.addEventListener('submit', async (ev) => {
			ev.preventDefault();
			showError(err, null);
			let b;
			try { b = body(); } catch (e) { showError(err, e.message); return; }
			apply.disabled = true;
			try {
				const nf = await post(`/api/data/files/${encodeURIComponent(f.id)}/${kind}`, b);
				highlight = nf && nf.id;
				note(nf ? `Created ${nf.name} (#${nf.id}, ${nf.format || ''}, ${fmtNumber(nf.requests)} requests).` : 'Done.');
				await refresh();
			} catch (e) {
				showError(err, e.message);
				apply.disabled = false;
			}
		});
		const first = form.querySelector('input, select');
		if (first) first.focus();
	}

	async function remove(tr, f) {
		if (!window.confirm(`Delete ${f.name}?`)) return;
		showError(listErr, null);
		try {
			await del(`/api/data/files/${encodeURIComponent(f.id)}`);
			note(`Deleted ${f.name}.`);
			if (analyzeView.dataset.fileId === String(f.id)) { analyzeView.hidden = true; charts.destroyAll(); }
			await refresh();
		} catch (e) {
			showError(listErr, `Delete ${f.name}: ${e.message}`);
		}
	}

	async function analyze(f) {
		charts.destroyAll();
		analyzeView.dataset.fileId = f.id;
		clear(analyzeView, h('h2', { text: `Analysis of ${f.name}` }), h('p.muted', { text: 'Analyzing…' }));
		analyzeView.hidden = false;
		const base = `/api/data/files/${encodeURIComponent(f.id)}/analyze`;
		let a;
		try {
			a = await get(base);
		} catch (e) {
			if (!alive) return;
			clear(analyzeView, h('h2', { text: `Analysis of ${f.name}` }),
				h('div.error#data-analyze-error', { role: 'alert', text: e.message }));
			return;
		}
		if (!alive || analyzeView.dataset.fileId !== String(f.id)) return;
		const reuse = chartBox('chart-reuse', 'Reuse distance (log2 buckets)');
		const wss = chartBox('chart-wss', 'Working set size over time');
		const top = Array.isArray(a.top) ? a.top : [];
		const csv = (part, text) => h('a.btn.btn-small.analyze-csv', {
			href: `${base}?format=csv&part=${part}`, download: `${f.name}.${part}.csv`, 'data-part': part, text,
		});
		clear(analyzeView,
			h('div.card-head', h('h2', { text: `Analysis of ${f.name}` }),
				h('div.toolbar', h('span.muted', { text: 'CSV: ' }), csv('top', 'Top keys'), csv('reuse', 'Reuse distance'), csv('wss', 'Working set'),
					h('button#data-analyze-close.btn.btn-small', { type: 'button', text: 'Close', onclick: () => { charts.destroyAll(); analyzeView.hidden = true; } }))),
			h('div.stats#analyze-summary', { testid: 'analyze-summary' },
				stat('Requests', fmtNumber(a.requests), 'requests'),
				stat('Objects', fmtNumber(a.objects), 'objects'),
				stat('Bytes', a.bytes === undefined ? '' : fmtBytes(a.bytes), 'bytes'),
				stat('Cold misses', fmtNumber(a.cold), 'cold'),
				stat('Window', fmtNumber(a.window), 'window')),
			h('div.charts', reuse.box, wss.box),
			h('h3', { text: `Top keys (${top.length})` }),
			h('div.table-scroll.short', h('table.grid#analyze-top', { testid: 'analyze-top' },
				h('thead', h('tr', h('th.num', { text: 'Rank' }), h('th', { text: 'Key' }), h('th.num', { text: 'Count' }),
					h('th.num', { text: 'Share' }), h('th.num', { text: 'Bytes' }))),
				h('tbody', top.map((t, i) => h('tr',
					h('td.num', { text: i + 1 }), h('td.mono', { text: String(t.key) }), h('td.num', { text: fmtNumber(t.count) }),
					h('td.num', { text: a.requests ? `${((100 * t.count) / a.requests).toFixed(2)}%` : '' }),
					h('td.num', { text: t.bytes === undefined ? '' : fmtBytes(t.bytes) })))))));
		const buckets = Array.isArray(a.reuse) ? a.reuse : [];
		charts.draw(reuse.canvas, {
			type: 'bar',
			data: {
				labels: buckets.map((b) => (b.le === null || b.le === undefined || b.le === 'inf' ? '∞' : `≤ ${fmtNumber(b.le)}`)),
				datasets: [{ label: 'requests', backgroundColor: '#4e79a7', data: buckets.map((b) => b.count) }],
			},
			options: {
				scales: { x: { title: axisTitle('reuse distance (distinct keys between uses)') }, y: { beginAtZero: true, title: axisTitle('requests') } },
				plugins: { legend: { display: false } },
			},
		});
		const pts = Array.isArray(a.wss) ? a.wss : [];
		const withBytes = pts.some((p) => p.bytes !== undefined);
		charts.draw(wss.canvas, {
			type: 'line',
			data: {
				datasets: [
					{ label: 'objects', yAxisID: 'y', borderColor: '#1f77b4', backgroundColor: '#1f77b4', pointRadius: pts.length > 60 ? 0 : 2, data: pts.map((p) => ({ x: p.start, y: p.objects })) },
					withBytes ? { label: 'bytes', yAxisID: 'y1', borderColor: '#ff7f0e', backgroundColor: '#ff7f0e', borderDash: [4, 3], pointRadius: pts.length > 60 ? 0 : 2, data: pts.map((p) => ({ x: p.start, y: p.bytes })) } : null,
				].filter(Boolean),
			},
			options: {
				scales: {
					x: { type: 'linear', title: axisTitle(`request (window ${a.window ?? '?'})`) },
					y: { beginAtZero: true, position: 'left', title: axisTitle('distinct objects') },
					y1: { display: withBytes, beginAtZero: true, position: 'right', grid: { drawOnChartArea: false }, title: axisTitle('bytes') },
				},
			},
		});
		analyzeView.scrollIntoView({ block: 'start' });
	}

	uploadForm.addEventListener('submit', async (ev) => {
		ev.preventDefault();
		showError(uploadErr, null);
		const file = fileIn.files && fileIn.files[0];
		if (!file) { showError(uploadErr, 'Choose a trace file to upload.'); return; }
		const fd = new FormData();
		fd.append('file', file, file.name);
		if (formatSel.value) fd.append('format', formatSel.value);
		if (csvIn.value.trim()) fd.append('csv', csvIn.value.trim());
		uploadBtn.disabled = true;
		try {
			const nf = await api('POST', '/api/data/files', fd);
			highlight = nf && nf.id;
			note(nf ? `Uploaded ${nf.name} (#${nf.id}, ${nf.format || ''}, ${fmtNumber(nf.requests)} requests, ${fmtNumber(nf.objects)} objects).` : 'Uploaded.');
			uploadForm.reset();
			await refresh();
		} catch (e) {
			showError(uploadErr, e.status === 413 ? `The file is too large: ${e.message}` : e.message);
		} finally {
			uploadBtn.disabled = false;
		}
	});

	refresh();
	return () => { alive = false; charts.destroyAll(); };
}

function stat(label, value, key) {
	return h('div.stat', { 'data-key': key }, h('div.stat-value', { text: value === '' ? '—' : value }), h('div.stat-label', { text: label }));
}
