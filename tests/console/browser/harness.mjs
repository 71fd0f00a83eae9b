// A tiny test runner and browser helpers for the console's browser tests: puppeteer-core
// drives Debian's chromium headless over the DevTools protocol. Each case prints "ok" or
// "FAIL"; waits are on events and selectors (bounded), never fixed sleeps.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

export const BASE = process.env.JOBWHEEL_CONSOLE_URL || 'http://127.0.0.1:7180/';
export const ADMIN_TOKEN = fs.readFileSync(process.env.JOBWHEEL_ADMIN_TOKEN_FILE, 'utf8').trim();
const SHOTS = process.env.JOBWHEEL_SCREENSHOTS || '';
const LOGS = process.env.JOBWHEEL_BROWSER_LOGS || os.tmpdir();
const CASE_TIMEOUT_MS = Number(process.env.JOBWHEEL_CASE_TIMEOUT_MS || 90000);
export const WAIT_MS = 30000;

const cases = [];
const ONLY = process.env.JOBWHEEL_CASES || '';  // Run only the cases whose name contains it.
export function test(name, fn) {
  if (!ONLY || name.includes(ONLY)) cases.push({name, fn});
}

export function assert(cond, message) {
  if (!cond) throw new Error(message);
}

let browser = null;
let profile = null;

async function launch() {
  profile = fs.mkdtempSync(path.join(os.tmpdir(), 'jobwheel-chromium-'));
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      `--user-data-dir=${profile}`, '--lang=en-US'],
  });
}

// A page in a fresh browser context (its own sessionStorage/localStorage), which records
// JavaScript dialogs, page errors and CSP violations: any of them fails the case.
export async function newPage() {
  const context = await browser.createBrowserContext();
  const page = await context.newPage();
  await page.setViewport({width: 1440, height: 900});
  page.problems = [];
  page.on('dialog', async (d) => {
    page.problems.push(`a JavaScript dialog opened: ${d.type()} "${d.message()}"`);
    await d.dismiss();
  });
  page.on('pageerror', (e) => page.problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) page.problems.push(`CSP: ${m.text()}`);
  });
  page.closeContext = () => context.close();
  return page;
}

export function checkProblems(page) {
  assert(page.problems.length === 0, page.problems.join('; '));
}

// Opens the console at a route (#/jobs) and waits for the shell.
export async function open(page, route = '/') {
  await page.goto(BASE + '#' + route, {waitUntil: 'domcontentloaded'});
  await page.waitForSelector('header.topbar', {timeout: WAIT_MS});
}

export async function signIn(page, token) {
  await open(page, '/');
  await page.waitForSelector('#token', {timeout: WAIT_MS});
  await page.type('#token', token);
  await page.click('[data-test=signin]');
  await page.waitForSelector('[data-test=who]', {timeout: WAIT_MS});
}

// Navigates inside the signed-in console (hash routing keeps the session).
export async function go(page, route) {
  await page.evaluate((r) => { location.hash = '#' + r; }, route);
}

// A Connect call made from the page (the same origin), as a script in the page could.
export async function api(page, service, method, body, token) {
  return page.evaluate(async (service, method, body, token) => {
    const r = await fetch(`/jobwheel.v1.${service}/${method}`, {method: 'POST',
      headers: {'Content-Type': 'application/json', 'Authorization': 'Bearer ' + token},
      body: JSON.stringify(body)});
    return {status: r.status, body: await r.json().catch(() => null)};
  }, service, method, body, token);
}

export async function apiOk(page, service, method, body, token = ADMIN_TOKEN) {
  const r = await api(page, service, method, body, token);
  assert(r.status === 200, `${service}/${method}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

// Waits until some element matching selector has text containing `text`.
export async function waitText(page, selector, text, timeout = WAIT_MS) {
  await page.waitForFunction((sel, txt) => [...document.querySelectorAll(sel)]
      .some((e) => e.textContent.includes(txt)), {timeout}, selector, text);
}

export async function textOf(page, selector) {
  return page.$eval(selector, (e) => e.textContent);
}

// Clicks the element matching selector whose text contains `text`.
export async function clickText(page, selector, text) {
  await waitText(page, selector, text);
  await page.evaluate((sel, txt) => [...document.querySelectorAll(sel)]
      .find((e) => e.textContent.includes(txt)).click(), selector, text);
}

export async function shot(page, name) {
  if (!SHOTS) return;
  fs.mkdirSync(SHOTS, {recursive: true});
  await page.screenshot({path: path.join(SHOTS, name + '.png'), fullPage: false});
}

function withTimeout(promise, ms, name) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name}: timed out after ${ms} ms`)), ms);
  })]).finally(() => clearTimeout(timer));
}

// Resolves true when every case passed; exits 77 when the browser cannot start at all.
export async function run() {
  try {
    await launch();
  } catch (e) {
    console.log(`cannot run: ${process.env.CHROMIUM || '/usr/bin/chromium'} did not start: ${e.message}`);
    process.exit(77);
  }
  let failed = 0;
  for (const c of cases) {
    const t0 = Date.now();
    try {
      await withTimeout(c.fn(), CASE_TIMEOUT_MS, c.name);
      console.log(`ok    ${c.name} (${Date.now() - t0} ms)`);
    } catch (e) {
      failed++;
      console.log(`FAIL  ${c.name} (${Date.now() - t0} ms): ${e.stack || e}`);
      // A picture of the first open page helps.
      try {
        const pages = (await browser.pages()).filter((p) => p.url().startsWith(BASE));
        if (pages.length) {
          const file = path.join(LOGS, `fail-${c.name.replace(/\W+/g, '_')}.png`);
          await pages[pages.length - 1].screenshot({path: file});
          console.log(`      screenshot: ${file}`);
        }
      } catch { /* the browser may be gone */ }
    }
  }
  await browser.close();
  fs.rmSync(profile, {recursive: true, force: true});
  console.log(`${cases.length - failed} passed, ${failed} failed`);
  return failed === 0;
}
