// Browser end-to-end tests of the web console (dsctl ui): run with
//   node --test --test-reporter=tap tests/ui/
// against DSUI_URL (see harness.mjs for the environment).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
	consoleUnderTest, startConsole, startMaster, freePort, launch, newPage, login, waitText, until, shot, chartData, pageFetch,
} from './harness.mjs';

const cut = await consoleUnderTest();
const skip = cut.skip || false;
const admin = cut.creds && cut.creds.admin;
const viewer = cut.creds && cut.creds.viewer;
let browser;
let tmp;

before(async () => {
	if (skip) return;
	browser = await launch();
	tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dsui-e2e-'));
});

after(async () => {
	if (browser) await browser.close();
	if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
	if (cut.stop) await cut.stop();
});

// Each test gets its own browser context (its own cookies).
function withPage(fn) {
	return async (t) => {
		const { context, page } = await newPage(browser, cut.url);
		try {
			await fn(page, t);
			assert.deepEqual(page.problems, [], 'no page errors or CSP violations');
		} finally {
			await context.close();
		}
	};
}

const uniq = () => crypto.randomBytes(4).toString('hex');

// Click Search on the logs page and wait for that search's answer.
// POST /api/login as the form does: with the CSRF token, and its cookie,
// of a GET of /api/login first.
async function apiLogin(request, user, password) {
	const g = await request.get('/api/login');
	const { csrf } = await g.json();
	return request.post('/api/login', { data: { user, password }, headers: { 'X-CSRF-Token': csrf } });
}

async function logSearch(page) {
	const seq = Number((await page.getAttribute('#logs-table', 'data-seq')) || 0);
	await page.click('#logs-search');
	await until(async () => Number((await page.getAttribute('#logs-table', 'data-seq')) || 0) > seq &&
		!(await page.getAttribute('#logs-table', 'data-busy')), 'the search');
	return page.locator('#logs-table tr.log-row');
}

// Failed logins count against the client's address (5 in 5 minutes lock it
// out), so the suite makes one: the wrong-password test's, which the logs
// test then looks for.
let failedLoginMade = false;

// Start a simulation from the form; returns its id once it is done.
async function runSim(page, { name, spec, policies = ['lru'], sizes = '5%,10%,20%' }) {
	await page.goto('/#/sim');
	await page.locator('[data-testid=policy-lru]').waitFor();
	await page.fill('#sim-name', name);
	await page.fill('#sim-gen', spec);
	assert.ok(await page.isChecked('#sim-src-gen'), 'typing a spec selects the generator');
	for (const box of await page.locator('#sim-policies input[name=policy]').all()) {
		const want = policies.includes(await box.getAttribute('value')) || (await box.getAttribute('value')) === 'belady';
		if ((await box.isChecked()) !== want) await box.click();
	}
	await page.fill('#sim-sizes', sizes);
	await page.click('#sim-run');
	await waitText(page, '#sim-detail-title', new RegExp(`^Run #\\d+: ${name}$`), 15000);
	const title = await page.textContent('#sim-detail-title');
	const id = Number(/#(\d+)/.exec(title)[1]);
	await waitText(page, '#sim-detail-state', /^(done|failed|canceled)$/, 90000);
	const state = (await page.textContent('#sim-detail-state')).trim();
	if (state !== 'done') {
		const why = (await page.locator('#sim-run-error').count()) ? await page.textContent('#sim-run-error') : '';
		assert.fail(`run ${id} ended ${state}: ${why}`);
	}
	return id;
}

test('log in as an admin', { skip }, withPage(async (page) => {
	await page.goto('/');
	await page.waitForURL(/#\/login$/);
	await page.locator('#login-form').waitFor();
	assert.equal(await page.isVisible('#topbar'), false, 'no top bar before logging in');
	await page.fill('#login-user', admin.user);
	await page.fill('#login-pass', admin.pass);
	await shot(page, 'login.png');
	await page.click('#login-submit');
	await page.waitForURL(/#\/sim$/);
	await waitText(page, '#nav-user', admin.user);
	assert.equal((await page.textContent('#nav-role')).trim(), 'admin');
	assert.ok(await page.isVisible('#logout'));
	const s = await page.evaluate(() => fetch('/api/session').then((r) => r.json()));
	assert.equal(s.user, admin.user);
	assert.equal(s.role, 'admin');
	assert.match(s.csrf, /\S{8,}/);
}));

test('with no users, the login page tells how to make one', { skip }, async (t) => {
	const empty = await startConsole({ users: false });
	if (empty.skip) {
		t.skip(`needs a dsctl to start a console of its own: ${empty.skip}`);
		return;
	}
	const { context, page } = await newPage(browser, empty.url);
	try {
		await page.goto('/');
		await page.locator('#login-form').waitFor();
		const hint = page.locator('#login-hint');
		await hint.waitFor({ state: 'visible' });
		assert.match(await hint.textContent(), /dsctl ui user add \S+ role admin/);
	} finally {
		await context.close();
		await empty.stop();
	}
});

test('a wrong password is refused with a visible error', { skip }, withPage(async (page) => {
	await page.goto('/#/login');
	await page.locator('#login-form').waitFor();
	await page.fill('#login-user', admin.user);
	await page.fill('#login-pass', `not-${admin.pass}`);
	await page.click('#login-submit');
	const err = page.locator('#login-error');
	await err.waitFor({ state: 'visible' });
	assert.equal(await err.getAttribute('role'), 'alert');
	assert.match(await err.textContent(), /wrong user name or password/i);
	assert.match(page.url(), /#\/login$/);
	assert.equal(await page.isVisible('#topbar'), false);
	failedLoginMade = true;
	const status = await page.evaluate(() => fetch('/api/session').then((r) => r.status));
	assert.equal(status, 401, 'no session after a failed login');
	await shot(page, 'login-failed.png');
}));

test('a simulation runs and its results are charted', { skip }, withPage(async (page) => {
	await login(page, admin);
	await page.goto('/#/sim');
	await page.locator('[data-testid=policy-belady]').waitFor();
	assert.ok(await page.isChecked('[data-testid=policy-belady]'), 'belady is checked by default');
	assert.match(await page.locator('label', { has: page.locator('[data-testid=policy-belady]') }).textContent(), /Belady \(optimal\) line/);
	assert.equal(await page.inputValue('#sim-sizes'), '1%,2%,5%,10%,20%');
	const name = `e2e-${uniq()}`;
	const id = await runSim(page, { name, spec: 'zipf:requests=20000,objects=2000,alpha=0.99', policies: ['lru'], sizes: '5%,10%,20%' });

	// the runs list
	const row = page.locator(`#sim-runs tr[data-run-id="${id}"]`);
	await until(async () => (await row.getAttribute('data-state')) === 'done', 'the run row to say done');
	assert.equal(Number(await row.locator('progress').evaluate((p) => p.value)), 1);
	assert.equal((await row.locator('.run-view').textContent()).trim(), name);
	assert.equal(await row.locator('.run-cancel').isVisible(), false, 'no Cancel on a finished run');

	// the charts
	const miss = await chartData(page, '#chart-miss');
	assert.ok(miss, 'a miss-ratio chart is drawn');
	assert.ok(miss.width > 100 && miss.height > 100, `the chart has a size (${miss.width}x${miss.height})`);
	const labels = miss.datasets.map((d) => d.label);
	assert.ok(labels.includes('lru'), `an lru line (${labels})`);
	const bel = miss.datasets.find((d) => /belady/i.test(d.label));
	assert.ok(bel, `a belady line (${labels})`);
	assert.ok(bel.borderDash.length > 0, 'belady is dashed');
	assert.equal(bel.n, 3, 'one point per size');
	const lru = miss.datasets.find((d) => d.label === 'lru');
	// Belady is optimal: never more misses than LRU at the same size
	for (let i = 0; i < 3; i++) assert.ok(bel.data[i].y <= lru.data[i].y + 1e-9, `belady <= lru at ${lru.data[i].x}`);
	const tiers = await chartData(page, '#chart-tiers');
	assert.equal(tiers.type, 'bar');
	assert.deepEqual(tiers.datasets.map((d) => d.label).slice(0, 1), ['L1']);
	assert.equal(tiers.labels.length, 6);
	const lat = await chartData(page, '#chart-latency');
	assert.deepEqual(lat.datasets.map((d) => d.label), ['mean', 'p99']);

	// the table, against the API's record
	const rec = await page.evaluate((i) => fetch(`/api/sim/runs/${i}`).then((r) => r.json()), id);
	assert.equal(rec.state, 'done');
	assert.equal(rec.result.runs.length, 6);
	const rows = page.locator('#sim-result-table tbody tr');
	assert.equal(await rows.count(), 6);
	const first = rec.result.runs[0];
	const cells = await rows.first().locator('td').allTextContents();
	assert.equal(cells[0], first.policy);
	assert.equal(Number(cells[2]), first.miss_ratio);
	await shot(page, 'sim.png');
}));

test('two runs are compared, and a run is deleted', { skip }, withPage(async (page) => {
	await login(page, admin);
	const a = await runSim(page, { name: `cmp-a-${uniq()}`, spec: 'zipf:requests=20000,objects=2000,alpha=0.7', policies: ['lru'], sizes: '5%,20%' });
	const b = await runSim(page, { name: `cmp-b-${uniq()}`, spec: 'zipf:requests=20000,objects=2000,alpha=1.2', policies: ['fifo'], sizes: '5%,20%' });
	assert.equal(await page.isDisabled('#sim-compare'), true, 'Compare needs two runs');
	await page.check(`#sim-runs tr[data-run-id="${a}"] .run-select`);
	await page.check(`#sim-runs tr[data-run-id="${b}"] .run-select`);
	await page.click('#sim-compare');
	await page.locator('#sim-compare-view #chart-compare').waitFor();
	await until(async () => chartData(page, '#chart-compare'), 'the comparison chart');
	const cmp = await chartData(page, '#chart-compare');
	const labels = cmp.datasets.map((d) => d.label);
	assert.ok(labels.some((l) => l.startsWith(`#${a} `) && l.endsWith('lru')), `run ${a}'s lru line in ${labels}`);
	assert.ok(labels.some((l) => l.startsWith(`#${b} `) && l.endsWith('fifo')), `run ${b}'s fifo line in ${labels}`);
	assert.equal(cmp.datasets.length, 4, 'two policies (one + belady) for each of two runs');
	const cols = page.locator('#sim-compare-tables .compare-col');
	assert.equal(await cols.count(), 2);
	assert.deepEqual(await cols.evaluateAll((els) => els.map((e) => Number(e.dataset.runId))), [a, b]);
	assert.equal(await page.locator(`#sim-compare-table-${b} tbody tr`).count(), 4);
	await shot(page, 'sim-compare.png');

	await page.click(`#sim-runs tr[data-run-id="${b}"] .run-delete`);
	await page.locator(`#sim-runs tr[data-run-id="${b}"]`).waitFor({ state: 'detached' });
	const status = await page.evaluate((i) => fetch(`/api/sim/runs/${i}`).then((r) => r.status), b);
	assert.equal(status, 404, 'the deleted run is gone');
}));

test('a simulation runs on an uploaded trace', { skip }, withPage(async (page) => {
	await login(page, admin);
	const name = `sim-${uniq()}.txt`;
	const keys = Array.from({ length: 4000 }, (_, i) => (i * 7919) % 300);
	const s = await page.evaluate(() => fetch('/api/session').then((r) => r.json()));
	const up = await page.context().request.post('/api/data/files', {
		headers: { 'X-CSRF-Token': s.csrf },
		multipart: { file: { name, mimeType: 'text/plain', buffer: Buffer.from(`${keys.join('\n')}\n`) } },
	});
	assert.equal(up.status(), 201, await up.text());
	const f = await up.json();
	await page.goto('/#/sim');
	await page.reload();	// the trace list is read when the page opens
	await page.locator(`#sim-trace option[value="file:${f.id}"]`).waitFor({ state: 'attached' });
	await page.selectOption('#sim-trace', `file:${f.id}`);
	assert.ok(await page.isChecked('#sim-src-trace'), 'choosing a trace selects it as the source');
	await page.fill('#sim-name', name);
	await page.fill('#sim-sizes', '50,100');
	await page.click('#sim-run');
	await waitText(page, '#sim-detail-title', new RegExp(`^Run #\\d+: ${name.replace(/\./g, '\\.')}$`));
	await waitText(page, '#sim-detail-state', /^(done|failed|canceled)$/, 60000);
	assert.equal((await page.textContent('#sim-detail-state')).trim(), 'done');
	const miss = await chartData(page, '#chart-miss');
	assert.deepEqual(miss.datasets[0].data.map((p) => p.x), [50, 100], 'one point per size, in entries');
	assert.match(await page.textContent('#sim-result-trace'), /4,000 requests, 300 objects/);
}));

test('a running simulation can be canceled', { skip }, withPage(async (page) => {
	await login(page, admin);
	await page.goto('/#/sim');
	await page.locator('[data-testid=policy-lru]').waitFor();
	const name = `cancel-${uniq()}`;
	await page.fill('#sim-name', name);
	// big enough to take several seconds
	await page.fill('#sim-gen', 'zipf:requests=30000000,objects=1000000,alpha=0.99');
	await page.fill('#sim-sizes', '1%,10%');
	await page.click('#sim-run');
	await waitText(page, '#sim-detail-title', new RegExp(`^Run #\\d+: ${name}$`));
	const id = Number(/#(\d+)/.exec(await page.textContent('#sim-detail-title'))[1]);
	const row = page.locator(`#sim-runs tr[data-run-id="${id}"]`);
	await row.waitFor();
	assert.match(await row.getAttribute('data-state'), /^(queued|running)$/);
	assert.equal(await row.locator('progress').count(), 1, 'a progress bar');
	await row.locator('.run-cancel').click();
	await until(async () => (await row.getAttribute('data-state')) === 'canceled', 'the run to be canceled', 20000);
	assert.equal(await row.locator('.run-cancel').isVisible(), false, 'no Cancel on a canceled run');
	await waitText(page, '#sim-detail-state', 'canceled');
	const rec = await page.evaluate((i) => fetch(`/api/sim/runs/${i}`).then((r) => r.json()), id);
	assert.equal(rec.state, 'canceled');
}));

test('a bad generator spec shows the simulator\'s error', { skip }, withPage(async (page) => {
	await login(page, admin);
	await page.goto('/#/sim');
	await page.locator('[data-testid=policy-lru]').waitFor();
	await page.fill('#sim-gen', 'zipf:nonsense=1');
	await page.click('#sim-run');
	const err = page.locator('#sim-error');
	await err.waitFor({ state: 'visible' });
	assert.match(await err.textContent(), /nonsense/);
}));

test('logs: component, text and level filters, export and live tail', { skip }, withPage(async (page) => {
	const api = page.context().request;
	if (!failedLoginMade) {
		// run alone: make the failed login the filters look for
		const failed = await apiLogin(api, admin.user, `not-${admin.pass}`);
		assert.equal(failed.status(), 401);
		failedLoginMade = true;
	}
	await login(page, admin);
	await page.goto('/#/logs');
	await page.locator('#logs-form').waitFor();

	// component=audit: only audit events, the logins among them
	await page.selectOption('#logs-component', 'audit');
	assert.ok(await (await logSearch(page)).count() > 0, 'audit events');
	const comps = await page.locator('#logs-table tr.log-row').evaluateAll((rs) => rs.map((r) => r.dataset.component));
	assert.ok(comps.every((c) => c === 'audit'), `only audit events (${[...new Set(comps)]})`);
	const msgs = await page.locator('#logs-table tr.log-row td.msg').allTextContents();
	assert.ok(msgs.some((m) => m.includes(admin.user) && /logged in/.test(m)), 'the admin\'s login is logged');
	const all = msgs.length;
	await shot(page, 'logs.png');

	// q narrows to the failed logins of the admin
	const q = `failed login of ${admin.user}`;
	await page.fill('#logs-q', q);
	await logSearch(page);
	const narrowed = await page.locator('#logs-table tr.log-row td.msg').allTextContents();
	assert.ok(narrowed.length >= 1, 'the failed login is found');
	assert.ok(narrowed.every((m) => m.includes(q)), `every event matches: ${narrowed}`);
	assert.ok(narrowed.length < all, 'the text filter narrows');
	const csv = await page.getAttribute('#logs-export-csv', 'href');
	assert.match(csv, /format=csv/);
	assert.match(csv, /component=audit/);
	assert.equal(new URL(csv, cut.url).searchParams.get('q'), q);
	const got = await api.get(csv);
	assert.equal(got.status(), 200);
	const lines = (await got.text()).trim().split('\n');
	assert.ok(lines.length >= 2 && lines.slice(1).every((l) => l.includes(q)), 'the CSV export holds the filtered events');
	const json = await api.get(await page.getAttribute('#logs-export-json', 'href'));
	assert.equal(json.status(), 200);
	const exported = await json.json();	// the export: an array, or the {events} page
	const list = Array.isArray(exported) ? exported : exported.events;
	assert.ok(list.length >= 1 && list.every((e) => e.message.includes(q)), 'the JSON export holds the filtered events');

	// level=warning: failed logins are warnings; no info events
	await page.fill('#logs-q', '');
	await page.selectOption('#logs-level', 'warning');
	const lv = await (await logSearch(page)).evaluateAll((rs) => rs.map((r) => r.dataset.level));
	assert.ok(lv.length > 0, 'the failed login is a warning');
	assert.ok(lv.every((l) => l === 'warning'), `only warnings (${[...new Set(lv)]})`);
	const warn = await page.locator('#logs-table tr.log-row td.msg').allTextContents();
	assert.ok(warn.length < all, 'the level filter narrows');
	assert.ok(warn.every((m) => !/logged in/.test(m)), 'no successful logins among the warnings');

	// live tail: a new login shows up at the top within a few seconds
	await page.selectOption('#logs-level', '');
	assert.ok(await (await logSearch(page)).count() >= all, 'the audit events again');
	const topBefore = await page.locator('#logs-table tr.log-row').first().getAttribute('data-id');
	// pushed by the server (an EventSource), not polled: no fetch or XHR
	// leaves the page while it waits for the line
	const polls = [];
	const streams = [];
	const onRequest = (rq) => {
		const type = rq.resourceType();
		if (type === 'fetch' || type === 'xhr') polls.push(`${rq.method()} ${rq.url()}`);
		if (type === 'eventsource') streams.push(rq.url());
	};
	page.on('request', onRequest);
	await page.check('#logs-live');
	await waitText(page, '#logs-live-state', /^following/);
	const started = Date.now();
	const other = await page.context().browser().newContext({ baseURL: cut.url });
	const r = await apiLogin(other.request, viewer.user, viewer.pass);
	assert.equal(r.status(), 200);
	await other.close();
	await until(async () => {
		const top = page.locator('#logs-table tr.log-row').first();
		return (await top.getAttribute('data-id')) !== topBefore &&
			(await top.locator('td.msg').textContent()).includes(`${viewer.user}: logged in`);
	}, 'the viewer\'s login in the live tail', 8000);
	// long enough for a poller (the old tail asked every second) to show
	await page.waitForTimeout(Math.max(0, 2500 - (Date.now() - started)));
	page.off('request', onRequest);
	assert.deepEqual(polls, [], 'the live tail issues no fetch or XHR');
	assert.equal(streams.length, 1, `one event stream (${streams})`);
	assert.match(streams[0], /\/api\/logs\/stream\?.*component=audit/);
	assert.equal(await page.locator('#logs-table tr.log-row td.msg', { hasText: `${viewer.user}: logged in` }).count() >= 1, true);
	await page.uncheck('#logs-live');
}));

test('logs: "Older" pages back with the cursor', { skip }, withPage(async (page) => {
	await login(page, admin);
	await page.goto('/#/logs');
	await page.locator('#logs-form').waitFor();
	await page.selectOption('#logs-limit', '10');
	const n = await (await logSearch(page)).count();
	assert.ok(n > 0, 'events');
	assert.ok(n <= 10);
	if (!(await page.isVisible('#logs-older'))) {
		assert.ok(n < 10, 'no Older button only when everything is shown');
		return;
	}
	await page.click('#logs-older');
	await until(async () => (await page.locator('#logs-table tr.log-row').count()) > n, 'older events');
	const ids = await page.locator('#logs-table tr.log-row').evaluateAll((rs) => rs.map((r) => Number(r.dataset.id)));
	for (let i = 1; i < ids.length; i++) assert.ok(ids[i] < ids[i - 1], 'newest first, no duplicates');
}));

test('data: upload, convert to CSV, analyze', { skip }, withPage(async (page) => {
	// a small text trace: one key per line, a skewed popularity
	const name = `e2e-${uniq()}.txt`;
	const file = path.join(tmp, name);
	const keys = [];
	let seed = 7;
	for (let i = 0; i < 3000; i++) {
		seed = (seed * 1103515245 + 12345) % 2147483648;
		const u = seed / 2147483648;
		keys.push(Math.floor(200 * u * u * u));
	}
	fs.writeFileSync(file, `${keys.join('\n')}\n`);
	const distinct = new Set(keys).size;

	await login(page, admin);
	await page.goto('/#/data');
	await page.locator('#data-upload-form').waitFor();
	await page.setInputFiles('#data-file', file);
	await page.click('#data-upload');
	const row = page.locator('#data-files tr.file-row', { hasText: name }).first();
	await row.waitFor();
	const id = await row.getAttribute('data-file-id');
	const cells = await row.locator('td').allTextContents();
	assert.equal(cells[1], name);
	assert.equal(cells[4].replace(/,/g, ''), '3000', 'requests');
	assert.equal(cells[5].replace(/,/g, ''), String(distinct), 'objects');
	const rowIds = () => page.locator('#data-files tr.file-row').evaluateAll((rs) => rs.map((r) => r.dataset.fileId));
	const before = await rowIds();

	// convert to csv: a new file, in csv, with the same requests
	await row.locator('.file-convert').click();
	await page.selectOption('#file-convert-to', 'csv');
	await page.click('#file-action-apply');
	const added = await until(async () => {
		const now = (await rowIds()).filter((x) => !before.includes(x));
		return now.length ? now : null;
	}, 'the converted file');
	assert.equal(added.length, 1, 'one new file');
	const conv = page.locator(`#data-files tr.file-row[data-file-id="${added[0]}"]`);
	const cc = await conv.locator('td').allTextContents();
	assert.equal(cc[2], 'csv');
	assert.equal(cc[4].replace(/,/g, ''), '3000');
	await shot(page, 'data.png');

	// filter: requests 1000 <= i < 2000 of the original; sample: a SHARDS subset
	const derive = async (kind, fill) => {
		const ids = await rowIds();
		await page.locator(`#data-files tr.file-row[data-file-id="${id}"] .file-${kind}`).click();
		await fill();
		await page.click('#file-action-apply');
		const made = await until(async () => {
			const now = (await rowIds()).filter((x) => !ids.includes(x));
			return now.length ? now : null;
		}, `the ${kind}ed file`);
		return (await page.locator(`#data-files tr.file-row[data-file-id="${made[0]}"] td`).allTextContents())[4].replace(/,/g, '');
	};
	assert.equal(await derive('filter', async () => {
		await page.fill('#file-filter-from', '1000');
		await page.fill('#file-filter-to', '2000');
	}), '1000', 'the filtered file holds requests 1000..1999');
	const sampled = Number(await derive('sample', () => page.fill('#file-sample-rate', '0.5')));
	assert.ok(sampled > 0 && sampled < 3000, `a sample is a subset (${sampled})`);

	// analyze the csv file
	await conv.locator('.file-analyze').click();
	await page.locator('#analyze-summary').waitFor();
	await waitText(page, '#analyze-summary [data-key=requests] .stat-value', '3,000');
	assert.equal((await page.textContent('#analyze-summary [data-key=objects] .stat-value')).replace(/,/g, ''), String(distinct));
	const top = await page.locator('#analyze-top tbody tr').count();
	assert.ok(top > 0, 'a top-keys table');
	const counts = new Map();
	for (const k of keys) counts.set(k, (counts.get(k) || 0) + 1);
	const hottest = [...counts].sort((x, y) => y[1] - x[1])[0];
	const firstRow = await page.locator('#analyze-top tbody tr').first().locator('td').allTextContents();
	assert.equal(firstRow[1], String(hottest[0]), 'the hottest key first');
	assert.equal(firstRow[2].replace(/,/g, ''), String(hottest[1]));
	const reuse = await chartData(page, '#chart-reuse');
	assert.equal(reuse.type, 'bar');
	assert.ok(reuse.labels.length > 0 && reuse.datasets[0].data.some((v) => v > 0), 'a reuse-distance histogram');
	const wss = await chartData(page, '#chart-wss');
	assert.ok(wss.datasets[0].n > 0, 'a working-set curve');
	const links = await page.locator('#data-analyze a.analyze-csv').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
	assert.equal(links.length, 3);
	for (const part of ['top', 'reuse', 'wss']) {
		const href = links.find((l) => l.includes(`part=${part}`));
		assert.ok(href, `a CSV link for ${part}`);
		const r = await page.context().request.get(href);
		assert.equal(r.status(), 200, `${href}`);
		assert.ok((await r.text()).trim().split('\n').length >= 2, `${part} CSV has a header and rows`);
	}
	await shot(page, 'data-analyze.png');
}));

test('data: a malformed trace is refused with the reader\'s message', { skip }, withPage(async (page) => {
	const file = path.join(tmp, `bad-${uniq()}.csv`);
	fs.writeFileSync(file, 'this,is\nnot a trace at all\n\u0000\u0001\n');
	await login(page, admin);
	await page.goto('/#/data');
	await page.locator('#data-upload-form').waitFor();
	await page.setInputFiles('#data-file', file);
	await page.selectOption('#data-format', 'oracleGeneral');
	await page.click('#data-upload');
	const err = page.locator('#data-upload-error');
	await err.waitFor({ state: 'visible' });
	assert.ok((await err.textContent()).trim().length > 5, 'the error says why');
	assert.equal(await page.locator('#data-files tr.file-row', { hasText: path.basename(file) }).count(), 0);
}));

test('cluster: the admin sees the state and the cache form', { skip }, withPage(async (page) => {
	await login(page, admin);
	await page.goto('/#/cluster');
	await waitText(page, '#cluster-status', /module (not )?loaded/);
	const state = await page.evaluate(() => fetch('/api/cluster').then((r) => r.json()));
	if (state.module) {
		assert.equal(await page.isVisible('#cluster-module-msg'), false);
		assert.ok(await page.locator('#cluster-cache table').count() > 0, 'the cache record as a table');
	} else {
		await page.locator('#cluster-module-msg').waitFor({ state: 'visible' });
		assert.match(await page.textContent('#cluster-module-msg'), state.error ? new RegExp(state.error.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) : /not loaded/);
	}
	// Slope's ranges and migrations, and what the console says of B+trees
	const slope = await page.evaluate(() => fetch('/api/cluster/slope').then((r) => r.json()));
	if (slope.module) {
		await page.locator('#cluster-slope-nodes').waitFor();
		await page.locator('#cluster-slope-migs').waitFor();
	} else {
		await waitText(page, '#cluster-slope-msg', /^unavailable: /);
	}
	assert.match(await page.textContent('#cluster-btrees-note'), /dsctl btree show/);
	await page.locator('#cache-form').waitFor();
	const names = await page.locator('#cache-param option').allTextContents();
	assert.ok(names.includes('l1_capacity'), `cache parameters offered (${names})`);
	// an impossible value is refused by the server, and shown
	await page.selectOption('#cache-param', 'mode');
	await page.fill('#cache-value', 'sideways');
	await page.click('#cache-apply');
	const err = page.locator('#cache-error');
	await err.waitFor({ state: 'visible' });
	assert.ok((await err.textContent()).trim().length > 3);
	await shot(page, 'cluster.png');
}));

test('store: a real master\'s leader, counters, tiers and segments', { skip }, async (t) => {
	const master = await startMaster();
	if (master.skip) {
		t.skip(master.skip);
		return;
	}
	let own;
	try {
		// a segment in the pool: an NVMe-oF namespace, registered (the
		// master takes its word for it)
		const dsctl = process.env.DSCTL || path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../build/user/user/tools/dsctl');
		execFileSync(dsctl, ['segment', 'add', 'pool', 'master', master.addr, 'traddr', '10.0.0.9',
			'subnqn', 'nqn.2026-01.io.dsmem:ui-test', 'size', '1G'], { env: { ...process.env, DSMEM_STORE_INSECURE: '1' } });
		own = await startConsole({ args: ['store-masters', master.addr], env: { DSMEM_STORE_INSECURE: '1' } });
		if (own.skip) {
			t.skip(own.skip);
			return;
		}
		const { context, page } = await newPage(browser, own.url);
		try {
			await login(page, own.creds.viewer);	// read only: a viewer sees it all
			await page.click('#nav-store');
			await page.waitForURL(/#\/store$/);
			await waitText(page, '#store-status', new RegExp(`^leader ${master.addr.replace(/\./g, '\\.')} · term \\d+$`));
			const leader = page.locator('#store-masters-table tr[data-role=leader]');
			assert.match(await leader.innerText(), new RegExp(master.addr.replace(/\./g, '\\.')));
			assert.equal((await page.textContent('#store-eviction [data-key=evictions] .stat-value')).trim(), '0');
			assert.equal((await page.textContent('#store-eviction [data-key=expiries] .stat-value')).trim(), '0');
			assert.equal((await page.textContent('#store-eviction [data-key=high_watermark_pct] .stat-value')).trim(), '95%');
			assert.equal((await page.textContent('#store-eviction [data-key=low_watermark_pct] .stat-value')).trim(), '85%');
			assert.equal((await page.textContent('#store-counters [data-key=objects] .stat-value')).trim(), '0');
			// a usage bar per tier, the watermarks as its thresholds
			const meter = page.locator('#store-tier-nvmeof');
			assert.equal(Number(await meter.getAttribute('value')), 0);
			assert.equal(Number(await meter.getAttribute('high')), 0.95);
			assert.match(await page.innerText('#store-tiers [data-tier=nvmeof]'), /0 B of 1\.0 GiB · 1 segment/);
			assert.match(await page.innerText('#store-tiers [data-tier=dram]'), /0 segments/);
			const seg = page.locator('#store-segments-table tbody tr');
			assert.equal(await seg.count(), 1);
			const cells = await seg.first().locator('td').allInnerTexts();
			assert.equal(cells[1], 'NVMe-oF');
			assert.equal(cells[2], 'alive');
			assert.match(cells[3], /10\.0\.0\.9:4420 nqn\.2026-01\.io\.dsmem:ui-test/);
			assert.equal(cells[5], '1.0 GiB');
			assert.equal(await seg.first().locator('meter').count(), 1);
			// no node to join the store as: no listing, and it says why
			await page.locator('#store-objects-msg').waitFor({ state: 'visible' });
			assert.match(await page.textContent('#store-objects-msg'), /store-node N/);
			assert.equal(await page.isVisible('#store-objects-form'), false);
			// no segment addresses anywhere
			assert.doesNotMatch(await page.innerText('#view'), /0x[0-9a-f]{6,}/i);
			await shot(page, 'store.png');
			assert.deepEqual(page.problems, [], 'no page errors or CSP violations');
		} finally {
			await context.close();
		}
	} finally {
		if (own && own.stop) await own.stop();
		await master.stop();
	}
});

test('store: no masters, and masters that do not answer, are said so', { skip }, async (t) => {
	// the console under test has none (unless DSUI_URL names one that has)
	{
		const { context, page } = await newPage(browser, cut.url);
		try {
			await login(page, viewer);
			await page.goto('/#/store');
			const cfg = await page.evaluate(() => fetch('/api/store').then((r) => r.json()));
			if (!cfg.configured) {
				await waitText(page, '#store-status', 'no object store configured');
				await page.locator('#store-config-msg').waitFor({ state: 'visible' });
				assert.match(await page.textContent('#store-config-msg'), /store-masters HOST:PORT/);
			}
		} finally {
			await context.close();
		}
	}
	// plaintext to a port nothing listens on: the library's 10 s deadline
	const addr = `127.0.0.1:${await freePort()}`;
	const own = await startConsole({ args: ['store-masters', addr], env: { DSMEM_STORE_INSECURE: '1' } });
	if (own.skip) {
		t.skip(own.skip);
		return;
	}
	const { context, page } = await newPage(browser, own.url);
	try {
		await login(page, own.creds.viewer);
		await page.goto('/#/store');
		const err = page.locator('#store-error');
		await err.waitFor({ state: 'visible', timeout: 40000 });
		assert.equal(await err.getAttribute('role'), 'alert');
		assert.match(await err.textContent(), new RegExp(`cannot reach the master at ${addr.replace(/\./g, '\\.')}`));
		assert.equal((await page.textContent('#store-status')).trim(), 'masters unreachable');
		await shot(page, 'store-unreachable.png');
		assert.deepEqual(page.problems, [], 'no page errors or CSP violations');
	} finally {
		await context.close();
		await own.stop();
	}
});

test('a viewer cannot change the cache settings', { skip }, withPage(async (page) => {
	await login(page, viewer);
	assert.equal((await page.textContent('#nav-role')).trim(), 'viewer');
	await page.goto('/#/cluster');
	await waitText(page, '#cluster-status', /module (not )?loaded/);
	assert.equal(await page.locator('#cache-form').count(), 0, 'no cache form for a viewer');
	const r = await pageFetch(page, 'POST', '/api/cluster/cache', { params: { l1_capacity: 1000 } });
	assert.equal(r.status, 403, `POST /api/cluster/cache as a viewer: ${JSON.stringify(r)}`);
	assert.ok(r.json && typeof r.json.error === 'string');
	// and without the CSRF token, a state change is refused too
	const noCsrf = await page.evaluate(() => fetch('/api/sim/runs', { method: 'POST', headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify({ trace: { gen: 'zipf:requests=100,objects=10' }, policies: ['lru'], sizes: ['10%'] }) }).then((x) => x.status));
	assert.equal(noCsrf, 403, 'a POST without X-CSRF-Token is refused');
	await shot(page, 'viewer-blocked.png');
}));

test('users: an admin adds a user, changes its role, resets its password and removes it', { skip }, async () => {
	const name = `u-${uniq()}`;
	const first = `first-${uniq()}-pw`;
	const second = `second-${uniq()}-pw`;
	const { context, page } = await newPage(browser, cut.url);
	const other = await newPage(browser, cut.url);
	const u = other.page;
	try {
		await login(page, admin);
		assert.ok(await page.isVisible('#nav-users'), 'admins have a Users page');
		await page.click('#nav-users');
		await page.locator('#users-form').waitFor();
		await page.locator('#users-table').waitFor();
		// the server's rules, shown: a password too short
		await page.fill('#users-name', name);
		await page.fill('#users-pass', 'short');
		await page.click('#users-add');
		await waitText(page, '#users-add-error', /a password has 8 to 1024 characters/);
		await page.fill('#users-pass', first);
		await page.selectOption('#users-role', 'viewer');
		await page.click('#users-add');
		const row = page.locator(`#users-table tr[data-user="${name}"]`);
		await row.waitFor();
		assert.equal(await row.getAttribute('data-role'), 'viewer');

		// the new user logs in: a viewer, with no user page and a 403
		await login(u, { user: name, pass: first });
		assert.equal((await u.textContent('#nav-role')).trim(), 'viewer');
		assert.equal(await u.isVisible('#nav-users'), false, 'no Users link for a viewer');
		await u.goto('/#/users');
		await u.waitForURL(/#\/sim$/);
		assert.equal(await u.locator('#users-form').count(), 0, 'no user page for a viewer');
		assert.equal((await pageFetch(u, 'GET', '/api/users')).status, 403);
		assert.equal((await pageFetch(u, 'POST', '/api/users', { name: `x-${uniq()}`, password: 'long-enough-pw' })).status, 403);

		// made an admin: the user's next page has it
		await row.locator('select.users-row-role').selectOption('admin');
		await row.locator('button.users-set-role').click();
		await waitText(page, '#users-ok', `${name} is now admin.`);
		await until(async () => (await row.getAttribute('data-role')) === 'admin', 'the new role in the table');
		await u.reload();
		await waitText(u, '#nav-role', 'admin');
		assert.ok(await u.isVisible('#nav-users'));

		// a new password: the old one fails, the new one works
		await row.locator('input.users-row-pass').fill(second);
		await row.locator('button.users-reset').click();
		await waitText(page, '#users-ok', `The password of ${name} is reset.`);
		assert.equal((await pageFetch(u, 'GET', '/api/session')).status, 401, 'the reset ended the user\'s session');
		await u.goto('/#/login');
		await u.locator('#login-form').waitFor();
		await u.fill('#login-user', name);
		await u.fill('#login-pass', first);
		await u.click('#login-submit');
		await waitText(u, '#login-error', /wrong user name or password/i);
		await login(u, { user: name, pass: second });

		// the last admin stays one: with the new user a viewer again, the
		// admin (the only one, unless DSUI_URL's console has more) cannot
		// make itself a viewer, and the page says why
		await row.locator('select.users-row-role').selectOption('viewer');
		await row.locator('button.users-set-role').click();
		await until(async () => (await row.getAttribute('data-role')) === 'viewer', 'back to a viewer');
		const admins = ((await pageFetch(page, 'GET', '/api/users')).json.users || []).filter((x) => x.role === 'admin');
		if (admins.length === 1) {
			const me = page.locator(`#users-table tr[data-user="${admin.user}"]`);
			await me.locator('select.users-row-role').selectOption('viewer');
			await me.locator('button.users-set-role').click();
			await waitText(page, '#users-error', /last admin/);
			await until(async () => (await me.locator('select.users-row-role').inputValue()) === 'admin',
				'the refused role not shown as set');
			assert.equal(await me.getAttribute('data-role'), 'admin');
		}
		await shot(page, 'users.png');

		// removed: gone from the table, and it can no longer log in
		await row.locator('button.users-remove').click();	// the confirm() is accepted
		await waitText(page, '#users-ok', `${name} is removed.`);
		await until(async () => (await page.locator(`#users-table tr[data-user="${name}"]`).count()) === 0, 'the row gone');
		const gone = await apiLogin(page.context().request, name, second);
		assert.equal(gone.status(), 401);

		// every change is in the audit log, under the admin's name
		const log = await pageFetch(page, 'GET', `/api/logs?component=audit&q=${encodeURIComponent(name)}&limit=100`);
		const msgs = log.json.events.map((e) => e.message);
		for (const m of [`added user ${name} as viewer`, `made ${name} admin (was viewer)`,
			`reset the password of ${name}`, `removed user ${name}`])
			assert.ok(msgs.includes(`${admin.user}: ${m}`), `audited: ${m} (${msgs})`);
		assert.deepEqual(page.problems, []);
		assert.deepEqual(u.problems, []);
	} finally {
		await context.close();
		await other.context.close();
	}
});

test('users: a viewer gets no user page, and 403 from the API', { skip }, withPage(async (page) => {
	await login(page, viewer);
	assert.equal(await page.isVisible('#nav-users'), false);
	await page.goto('/#/users');
	await page.waitForURL(/#\/sim$/);
	assert.equal(await page.locator('#users-form').count(), 0);
	for (const [m, url, body] of [['GET', '/api/users'], ['POST', '/api/users', { name: 'mallory', password: 'long-enough-pw' }],
		['PATCH', `/api/users/${viewer.user}`, { role: 'admin' }], ['POST', `/api/users/${admin.user}/password`, { password: 'long-enough-pw' }],
		['DELETE', `/api/users/${admin.user}`]]) {
		const r = await pageFetch(page, m, url, body);
		assert.equal(r.status, 403, `${m} ${url} as a viewer: ${JSON.stringify(r)}`);
	}
}));

test('log out: the session ends and the login page shows', { skip }, withPage(async (page) => {
	await login(page, admin);
	await page.goto('/#/logs');
	await page.locator('#logs-form').waitFor();
	await page.click('#logout');
	await page.waitForURL(/#\/login$/);
	await page.locator('#login-form').waitFor();
	assert.equal(await page.isVisible('#topbar'), false);
	const status = await page.evaluate(() => fetch('/api/session').then((r) => r.status));
	assert.equal(status, 401);
	// a page that needs a session sends the user back to the login page
	await page.goto('/#/data');
	await page.waitForURL(/#\/login$/);
	await page.locator('#login-form').waitFor();
}));
