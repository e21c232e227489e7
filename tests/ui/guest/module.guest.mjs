// The console beside dsmem in a test guest (tests/ui/guest/run.sh, the
// host's Chromium through a forwarded port): the module's
// events arrive live in the log page, in real Chromium, the cluster
// page shows what the module holds (Slope's ranges too), and the store
// page a real master and its objects, listed through a local node.  The
// cluster page's token cache is charted (points added each refresh), its
// raw counters are behind a closed disclosure, and no table is cut off at
// 1400 px.
// Timeouts are long, bounds on waits only: the guest is TCG.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { launch, newPage, login, shot, until, waitText, chartData } from '../harness.mjs';

const url = process.env.DSUI_URL;
const admin = { user: process.env.DSUI_ADMIN_USER, pass: process.env.DSUI_ADMIN_PASS };
const slow = 180000;

// dsctl where the module is: DSUI_DSCTL_RELAY is the guest's directory
// of tests/ui/guest/serve.sh (in the run directory, shared live), which
// runs each command in the guest and answers with its status and output;
// without it, DSCTL here.  Throws on a failing command, as execFileSync.
const relay = process.env.DSUI_DSCTL_RELAY;
let asked = 0;
async function dsctl(...words) {
	if (!relay) return execFileSync(process.env.DSCTL, words, { encoding: 'utf8' });
	const base = path.join(relay, 'dsctl', `${process.pid}-${++asked}`);
	fs.writeFileSync(`${base}.tmp`, words.join('\0'));
	fs.renameSync(`${base}.tmp`, `${base}.req`);
	await until(() => fs.existsSync(`${base}.res`) || fs.existsSync(path.join(relay, 'ended')),
		`dsctl ${words.join(' ')} in the guest`, slow, 100);
	assert.ok(fs.existsSync(`${base}.res`), `the guest stopped before dsctl ${words.join(' ')}`);
	const res = fs.readFileSync(`${base}.res`, 'utf8');
	fs.unlinkSync(`${base}.res`);
	const nl = res.indexOf('\n');
	const rc = Number(res.slice(0, nl));
	const out = res.slice(nl + 1);
	if (rc !== 0) throw new Error(`dsctl ${words.join(' ')} (in the guest): status ${rc}: ${out}`);
	return out;
}

test('module events arrive live in the log page; the cluster page shows them', { timeout: 900000 }, async () => {
	assert.ok(url, 'DSUI_URL');
	const browser = await launch();
	try {
		const { context, page } = await newPage(browser, url);
		context.setDefaultTimeout(slow);
		await login(page, admin);

		await page.goto('/#/logs');
		await page.locator('#logs-form').waitFor();
		await page.selectOption('#logs-component', 'node');
		// Rows are counted once the filtered search is shown (the
		// table's data-seq counts the searches shown) and the tail
		// follows: a fast browser otherwise counted the page's first,
		// unfiltered rows, and a tail opened after the nodes were added
		// starts after them.
		const shown = Number(await page.getAttribute('#logs-table', 'data-seq')) || 0;
		await page.click('#logs-form button[type=submit]');
		await until(async () => Number(await page.getAttribute('#logs-table', 'data-seq')) > shown,
			'the search for node events shown', slow, 200);
		await page.check('#logs-live');
		await waitText(page, '#logs-live-state', /^following/, slow);
		const rows = page.locator('#logs-table tr.log-row');
		const before = await rows.count();

		// the module acts while the page is open: nothing reloads it
		await dsctl('node', 'add', 'id', '7', 'dev', 'rxe0', 'port', '18777');
		await dsctl('node', 'add', 'id', '8', 'dev', 'rxe0', 'port', '18778');
		const text = await until(async () => {
			const t = await page.locator('#logs-table').textContent();
			return /node_new node 7/.test(t) && /node_new node 8/.test(t) ? t : null;
		}, 'node_new of nodes 7 and 8 in the live tail', slow, 500);
		assert.ok(await rows.count() >= before + 2);
		assert.match(text, /node_new node 8 dev rxe0 port 18778/);
		// only the component asked for: no segment or device rows
		for (const c of await page.locator('#logs-table tr.log-row').evaluateAll(
			(trs) => trs.map((tr) => tr.getAttribute('data-component'))))
			assert.equal(c, 'node');
		await shot(page, 'logs-live-module.png');

		await dsctl('segment', 'add', 'node', '8', 'size', '64M');
		await dsctl('segment', 'grant', 'node', '8', 'seg', '1', 'to', '7', 'perm', 'rw');
		// node 8 admits node 7 (a listen peer), which connects to it
		const local = process.env.DSMEM_LOCAL_ADDR || '127.0.0.1';
		await dsctl('peer', 'add', 'node', '8', 'addr', local, 'remote', '7', 'listen');
		await dsctl('peer', 'add', 'node', '7', 'addr', local, 'port', '18778', 'remote', '8');
		await page.goto('/#/cluster');
		await page.locator('#cluster-nodes').waitFor();
		try {
			await until(async () => {
				// innerText: cells apart (textContent runs "8", "up", "1" together)
				const t = await page.locator('#cluster-nodes').innerText();
				const s = await page.locator('#cluster-segments').innerText();
				const p = await page.locator('#cluster-peers').innerText();
				return /18777/.test(t) && /18778/.test(t) && /67108864/.test(s) && (p.match(/\bup\b/g) || []).length >= 2;
			}, 'nodes 7 and 8, the segment and both peer ends up on the cluster page', slow, 1000);
		} finally {
			await shot(page, 'cluster-live.png');
		}
		assert.match(await page.locator('#cluster-cache').textContent(), /promote_l1/);

		// the token cache as charts that move: each refresh adds a point
		const always = ['#chart-cache-hits', '#chart-cache-moves', '#chart-cache-cost'];
		const first = await until(async () => {
			const d = await chartData(page, always[0]);
			return d && d.labels.length >= 2 ? d : null;
		}, 'two points on the hits chart', slow, 1000);
		const later = await until(async () => {
			const d = await chartData(page, always[0]);
			return d && d.labels.at(-1) !== first.labels.at(-1) ? d : null;
		}, 'a point more on the hits chart', slow, 1000);
		assert.notDeepEqual(later.labels, first.labels, 'the time axis moved');
		for (const sel of always) {
			const d = await chartData(page, sel);
			assert.ok(d && d.datasets.length >= 1, `${sel} is a chart`);
			assert.ok(await page.isVisible(sel), `${sel} is shown`);
			for (const ds of d.datasets) {
				assert.equal(ds.n, d.labels.length, `${sel} ${ds.label}: a value at every point`);
				assert.ok(ds.data.slice(-2).every((v) => typeof v === 'number' && Number.isFinite(v)),
					`${sel} ${ds.label}: numbers (${ds.data.slice(-2)})`);
			}
		}
		assert.deepEqual((await chartData(page, '#chart-cache-hits')).datasets.map((x) => x.label), ['L1', 'L2', 'L3']);
		// migration charts only with the record's "migration" object
		const state = await page.evaluate(() => fetch('/api/cluster').then((r) => r.json()));
		const mig = Boolean(state.cache && state.cache.migration);
		for (const sel of ['#chart-mig-rate', '#chart-mig-latency', '#chart-mig-dma'])
			assert.equal(await page.isVisible(sel), mig, `${sel} shown only with cache.migration (${mig})`);

		// the raw counters: inside a closed disclosure, and only there
		const raw = page.locator('#cluster-cache-raw');
		assert.equal(await raw.evaluate((el) => el.tagName), 'DETAILS');
		assert.equal(await raw.evaluate((el) => el.open), false, 'the counters start closed');
		assert.ok(await raw.locator('[data-key=counters]').count() >= 1, 'the counters are in it');
		assert.equal(await page.locator('#cluster-cache [data-key=counters]').count(),
			await raw.locator('[data-key=counters]').count(), 'no counters outside it');
		assert.equal(await raw.locator('[data-key=counters] table').isVisible(), false);

		// no table wider than its box unless a box around it scrolls
		const clipped = () => page.evaluate(() => {
			const out = [];
			for (const t of document.querySelectorAll('#view table')) {
				if (!t.offsetParent) continue;	// not shown (a closed disclosure)
				for (let el = t.parentElement; el && el.id !== 'view'; el = el.parentElement) {
					const ox = getComputedStyle(el).overflowX;
					if (ox === 'auto' || ox === 'scroll') break;
					if (el.scrollWidth > el.clientWidth + 1) {
						out.push(`${t.id || t.className} in ${el.tagName}#${el.id}.${el.className}: ${el.scrollWidth} > ${el.clientWidth}`);
						break;
					}
				}
			}
			const doc = document.documentElement;
			if (doc.scrollWidth > window.innerWidth + 1) out.push(`the page: ${doc.scrollWidth} > ${window.innerWidth}`);
			return out;
		});
		assert.equal(page.viewportSize().width, 1400);
		assert.deepEqual(await clipped(), [], 'no table cut off at 1400 px');
		await shot(page, 'cluster-charts.png');
		await raw.locator('summary').click();
		assert.deepEqual(await clipped(), [], 'nor with the raw counters open');
		await raw.locator('summary').click();
		// Slope: each node's part of the range
		await until(async () => (await page.locator('#cluster-slope-nodes tr[data-node="7"]').count()) &&
			(await page.locator('#cluster-slope-nodes tr[data-node="8"]').count()),
		'nodes 7 and 8 in the Slope table', slow, 1000);

		// the store page: a real master, and objects listed through node 7
		const master = process.env.DSUI_STORE_MASTER;
		if (master) {
			await page.goto('/#/store');
			await waitText(page, '#store-status', new RegExp(`^leader ${master.replace(/\./g, '\\.')} · term \\d+$`), slow);
			assert.equal((await page.textContent('#store-eviction [data-key=evictions] .stat-value')).trim(), '0');
			await page.click('#store-list');
			await until(async () => Number((await page.getAttribute('#store-objects-body', 'data-seq')) || 0) > 0,
				'the object listing', slow, 500);
			try {
				assert.equal(await page.isVisible('#store-objects-error'), false,
					`no listing error: ${await page.textContent('#store-objects-error')}`);
				// no DRAM in the pool: nothing was ever put
				assert.match(await page.textContent('#store-objects-body'), /No objects\./);
			} finally {
				await shot(page, 'store-guest.png');
			}
		}
		await context.close();
	} finally {
		await browser.close();
		for (const id of ['7', '8']) {
			try { await dsctl('node', 'del', 'id', id); } catch { /* already gone */ }
		}
	}
});
