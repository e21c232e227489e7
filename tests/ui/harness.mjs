// Shared set-up of the console's browser tests: the console to test, the
// browser (Debian's Chromium through playwright-core), logging in, and
// screenshots.
//
// Environment:
//   DSUI_URL                            the console's base URL, e.g. http://127.0.0.1:8080
//   DSUI_ADMIN_USER, DSUI_ADMIN_PASS    an admin's credentials
//   DSUI_VIEWER_USER, DSUI_VIEWER_PASS  a viewer's credentials
//   DSUI_SHOTS                          where to save screenshots (optional)
//   DSMASTER                            the store page's master (default
//                                       build/user/user/tools/dsmaster/dsmaster)
//   CHROMIUM                            the browser (default /usr/bin/chromium)
// Without DSUI_URL, a console is started from DSCTL (default
// build/user/user/tools/dsctl) on a temporary database with two users made
// for the run; without that either, the tests are skipped, unless DSCTL
// was given (as tests/run does): then a missing or wrong dsctl fails them.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

// ---- the console under test ------------------------------------------------

function addUser(dsctl, db, name, role, password) {
	const r = spawnSync(dsctl, ['ui', 'user', 'add', name, 'role', role, 'db', db], {
		input: `${password}\n${password}\n`, encoding: 'utf8', timeout: 30000,
	});
	if (r.status !== 0) throw new Error(`dsctl ui user add ${name}: ${r.stderr || r.stdout || r.error}`);
}

// Start "dsctl ui serve" on a new database in a temporary directory, with an
// admin and a viewer (or no users at all); args are more words for serve,
// env more environment for it.
export async function startConsole({ users = true, args = [], env = {} } = {}) {
	const dsctl = process.env.DSCTL || path.join(ROOT, 'build/user/user/tools/dsctl');
	const required = Boolean(process.env.DSCTL);
	if (!fs.existsSync(dsctl)) {
		if (required) throw new Error(`DSCTL=${dsctl} does not exist`);
		return { skip: `no DSUI_URL and no ${dsctl}` };
	}
	const help = spawnSync(dsctl, ['ui', 'help'], { encoding: 'utf8', timeout: 10000 });
	if (!/serve/.test(`${help.stdout}${help.stderr}`)) {
		if (required) throw new Error(`${dsctl} has no "ui" object`);
		return { skip: `${dsctl} has no "ui" object` };
	}
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsui-test-'));
	const db = path.join(dir, 'ui.db');
	const pw = () => crypto.randomBytes(12).toString('base64url');
	const creds = {
		admin: { user: 'admin', pass: pw() },
		viewer: { user: 'viewer', pass: pw() },
	};
	if (users) {
		addUser(dsctl, db, creds.admin.user, 'admin', creds.admin.pass);
		addUser(dsctl, db, creds.viewer.user, 'viewer', creds.viewer.pass);
	}
	const child = spawn(dsctl, ['ui', 'serve', 'listen', '127.0.0.1:0', 'db', db, ...args],
		{ stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
	let out = '';
	const url = await new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`dsctl ui serve printed no address: ${out}`)), 15000);
		const look = (d) => {
			out += d;
			const m = /(https?:\/\/[\d.:[\]a-z]+:\d+)/i.exec(out);
			if (m) { clearTimeout(timer); resolve(m[1]); }
		};
		child.stdout.on('data', look);
		child.stderr.on('data', look);
		child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`dsctl ui serve exited ${code}: ${out}`)); });
	});
	child.stdout.resume();
	child.stderr.resume();
	return {
		url,
		creds,
		stop: async () => {
			if (child.exitCode === null) {
				child.kill('SIGTERM');
				await new Promise((r) => { child.once('exit', r); setTimeout(r, 5000); });
			}
			fs.rmSync(dir, { recursive: true, force: true });
		},
	};
}

export async function consoleUnderTest() {
	if (process.env.DSUI_URL) {
		const need = ['DSUI_ADMIN_USER', 'DSUI_ADMIN_PASS', 'DSUI_VIEWER_USER', 'DSUI_VIEWER_PASS'];
		const missing = need.filter((k) => !process.env[k]);
		if (missing.length) throw new Error(`DSUI_URL is set but ${missing.join(', ')} is not`);
		return {
			url: process.env.DSUI_URL.replace(/\/+$/, ''),
			creds: {
				admin: { user: process.env.DSUI_ADMIN_USER, pass: process.env.DSUI_ADMIN_PASS },
				viewer: { user: process.env.DSUI_VIEWER_USER, pass: process.env.DSUI_VIEWER_PASS },
			},
			stop: async () => {},
		};
	}
	return startConsole();
}

// ---- the object store's master --------------------------------------------------

// A loopback port nothing listens on (just now).
export async function freePort() {
	const srv = net.createServer();
	await new Promise((resolve, reject) => { srv.once('error', reject); srv.listen(0, '127.0.0.1', resolve); });
	const { port } = srv.address();
	await new Promise((r) => srv.close(r));
	return port;
}

// A dsmaster on loopback, plaintext (--insecure), its metadata in a
// temporary directory.  Its control plane runs without the module: the
// store page's masters, segments and counters are all there.  { skip }
// when there is no dsmaster to run.
export async function startMaster() {
	const bin = process.env.DSMASTER || path.join(ROOT, 'build/user/user/tools/dsmaster/dsmaster');
	if (!fs.existsSync(bin)) return { skip: `no dsmaster at ${bin}` };
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsui-master-'));
	const addr = `127.0.0.1:${await freePort()}`;
	const child = spawn(bin, ['--listen', addr, '--node', '1', '--addr', '127.0.0.1', '--port', '18001',
		'--data-dir', dir, '--slow-tier', 'none', '--insecure', '--metrics-listen', 'none'],
	{ stdio: ['ignore', 'pipe', 'pipe'] });
	let out = '';
	await new Promise((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`dsmaster did not lead: ${out}`)), 15000);
		const look = (d) => {
			out += d;
			if (/leader \(term/.test(out)) { clearTimeout(timer); resolve(); }
		};
		child.stdout.on('data', look);
		child.stderr.on('data', look);
		child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`dsmaster exited ${code}: ${out}`)); });
	});
	child.stdout.resume();
	child.stderr.resume();
	return {
		addr,
		stop: async () => {
			if (child.exitCode === null) {
				child.kill('SIGTERM');
				await new Promise((r) => { child.once('exit', r); setTimeout(r, 5000); });
			}
			fs.rmSync(dir, { recursive: true, force: true });
		},
	};
}

// ---- the browser -------------------------------------------------------------

export async function launch() {
	return chromium.launch({
		executablePath: CHROMIUM,
		headless: true,
		args: ['--no-sandbox', '--disable-dev-shm-usage'],
	});
}

// A fresh context and page; page errors and CSP violations are collected
// so a test can assert there were none.
export async function newPage(browser, base) {
	const context = await browser.newContext({ baseURL: base, viewport: { width: 1400, height: 1000 }, acceptDownloads: true });
	context.setDefaultTimeout(15000);
	const page = await context.newPage();
	page.problems = [];
	page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
	page.on('console', (m) => {
		if (m.type() === 'error' && /Content Security Policy|Refused to/i.test(m.text())) page.problems.push(`console: ${m.text()}`);
	});
	page.on('dialog', (d) => d.accept());
	return { context, page };
}

export async function login(page, cred) {
	await page.goto('/#/login');
	await page.locator('#login-form').waitFor();
	await page.fill('#login-user', cred.user);
	await page.fill('#login-pass', cred.pass);
	await page.click('#login-submit');
	await page.locator('#topbar:not([hidden]), #login-error:not([hidden])').first().waitFor();
	if (await page.isVisible('#login-error')) {
		assert.fail(`cannot log in as ${cred.user}: ${await page.textContent('#login-error')}`);
	}
	await waitText(page, '#nav-user', cred.user);
}

export async function waitText(page, selector, text, timeout = 15000) {
	const loc = page.locator(selector);
	const deadline = Date.now() + timeout;
	let last = '';
	while (Date.now() < deadline) {
		last = (await loc.count()) ? (await loc.first().textContent()) || '' : '';
		if (typeof text === 'string' ? last.trim() === text : text.test(last)) return last;
		await page.waitForTimeout(100);
	}
	assert.fail(`${selector}: wanted ${text}, have "${last}"`);
}

// Poll fn() until it returns a truthy value.
export async function until(fn, what, timeout = 15000, every = 200) {
	const deadline = Date.now() + timeout;
	let last;
	while (Date.now() < deadline) {
		last = await fn();
		if (last) return last;
		await new Promise((r) => setTimeout(r, every));
	}
	assert.fail(`timed out waiting for ${what} (last: ${JSON.stringify(last)})`);
}

// ---- screenshots -------------------------------------------------------------

export async function shot(page, name) {
	const dir = process.env.DSUI_SHOTS;
	if (!dir) return;
	fs.mkdirSync(dir, { recursive: true });
	await page.evaluate(() => window.scrollTo(0, 0));
	await page.screenshot({ path: path.join(dir, name), fullPage: true });
}

// The data of the Chart.js chart drawn on a canvas.
export async function chartData(page, canvasSelector) {
	return page.evaluate((sel) => {
		const c = document.querySelector(sel);
		const ch = c && window.Chart && window.Chart.getChart(c);
		if (!ch) return null;
		return {
			type: ch.config.type,
			width: c.width,
			height: c.height,
			labels: ch.data.labels || [],
			datasets: ch.data.datasets.map((d) => ({ label: d.label, n: d.data.length, borderDash: d.borderDash || [], data: d.data })),
		};
	}, canvasSelector);
}

// The session's CSRF token, and a fetch from inside the page (its cookie).
export async function pageFetch(page, method, url, body) {
	return page.evaluate(async ({ method, url, body }) => {
		const s = await fetch('/api/session').then((r) => (r.ok ? r.json() : {}));
		const r = await fetch(url, {
			method,
			headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf || '' },
			body: body === undefined ? undefined : JSON.stringify(body),
		});
		let json = null;
		try { json = await r.json(); } catch { /* not JSON */ }
		return { status: r.status, json };
	}, { method, url, body });
}
