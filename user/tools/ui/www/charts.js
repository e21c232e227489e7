// Chart.js (v3, the UMD build at /vendor/chart.js defines window.Chart)
// wrappers: one registry so a page can destroy its charts when it leaves.

export const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b',
	'#e377c2', '#17becf', '#bcbd22', '#7f7f7f', '#393b79', '#ad494a'];

export const TIER_COLORS = { l1: '#2ca02c', l2: '#ff7f0e', l3: '#d62728' };

export function color(i) { return PALETTE[i % PALETTE.length]; }

export class Charts {
	constructor() { this.charts = new Map(); }

	// Create (or replace) the chart drawn on the canvas with this id.
	draw(canvas, config) {
		const old = this.charts.get(canvas.id);
		if (old) old.destroy();
		if (typeof window.Chart !== 'function') {
			canvas.replaceWith(Object.assign(document.createElement('div'),
				{ className: 'error', textContent: 'Chart.js is not available (/vendor/chart.js)' }));
			return null;
		}
		const Chart = window.Chart;
		config.options = Object.assign({
			animation: false,
			responsive: true,
			maintainAspectRatio: false,
			interaction: { mode: 'nearest', intersect: false },
		}, config.options || {});
		if (config.type === 'line') {
			// legend entries drawn as short lines, so dashed series read as dashed
			const plugins = config.options.plugins = config.options.plugins || {};
			const legend = plugins.legend = plugins.legend || {};
			legend.labels = Object.assign({ boxWidth: 28, boxHeight: 0 }, legend.labels || {});
		}
		const c = new Chart(canvas.getContext('2d'), config);
		this.charts.set(canvas.id, c);
		canvas.dataset.chart = config.type;
		return c;
	}

	destroyAll() {
		for (const c of this.charts.values()) c.destroy();
		this.charts.clear();
	}
}

// A canvas inside a sized box (Chart.js needs a positioned, sized parent).
export function chartBox(id, title) {
	const canvas = document.createElement('canvas');
	canvas.id = id;
	canvas.setAttribute('role', 'img');
	canvas.setAttribute('aria-label', title);
	const box = document.createElement('figure');
	box.className = 'chart';
	const cap = document.createElement('figcaption');
	cap.textContent = title;
	const wrap = document.createElement('div');
	wrap.className = 'chart-wrap';
	wrap.append(canvas);
	box.append(cap, wrap);
	return { box, canvas };
}

export function axisTitle(text) { return { display: true, text }; }
