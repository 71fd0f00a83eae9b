// The web console as a person uses it, in Debian's chromium (headless).
// Run by tests/console/check_browser.sh, which starts the stack and sets the environment.

import {test, run, assert, newPage, checkProblems, open, signIn, go, api, apiOk, waitText,
  textOf, clickText, shot, ADMIN_TOKEN, WAIT_MS, BASE} from './harness.mjs';

const XSS_NAME = '<img src=x onerror=alert(1)>';
const XSS_LINE = '<script>alert(1)</script>';

// Waits for the jobs table to list a job, by name.
async function waitJobRow(page, name) {
  await page.waitForFunction((n) => [...document.querySelectorAll('tr[data-job]')]
      .some((tr) => tr.dataset.job === n), {timeout: WAIT_MS}, name);
}

// Opens a job's detail page from the jobs list.
async function openJob(page, name) {
  await go(page, '/jobs');
  await waitJobRow(page, name);
  await page.evaluate((n) => [...document.querySelectorAll('tr[data-job]')]
      .find((tr) => tr.dataset.job === n).querySelector('td.name a').click(), name);
  await page.waitForFunction((n) => {
    const e = document.querySelector('[data-test=job-name]');
    return e && e.textContent === n;
  }, {timeout: WAIT_MS}, name);
}

async function waitRunStatus(page, status, timeout = WAIT_MS) {
  await page.waitForSelector(`tr[data-status=${status}] a`, {timeout});
}

test('sign in with the admin token, see the demo jobs and echo-every-second\'s SUCCEEDED runs',
    async () => {
      const page = await newPage();
      await signIn(page, ADMIN_TOKEN);
      await page.waitForSelector('[data-test=leader]', {timeout: WAIT_MS});
      await page.waitForSelector('svg.chart', {timeout: WAIT_MS});
      // A job that always fails, for the dashboard's failures (last case).
      await apiOk(page, 'JobAdminService', 'CreateJob', {job: {app: 'demo', name: 'always-fails',
        handler: 'fail', param: 'disk full on /var/data', failRetryCount: 1,
        schedule: {cron: {expression: '*/3 * * * * ?'}}, enabled: true}});
      await go(page, '/jobs');
      for (const name of ['echo-every-second', 'nightly-report', 'round-robin-5s']) {
        await waitJobRow(page, name);
      }
      await shot(page, 'jobs');
      await openJob(page, 'echo-every-second');
      await waitRunStatus(page, 'SUCCEEDED');
      await waitText(page, '[data-test=preview-times] li', 'UTC');
      // Times are local, with the UTC time on hover.
      assert(await page.$('tr[data-status=SUCCEEDED] time[title$=" UTC"]') !== null,
          'a run time without its UTC title');
      await shot(page, 'job-detail');
      await go(page, '/executors');
      await page.waitForSelector('tr[data-executor]', {timeout: WAIT_MS});
      await shot(page, 'executors');
      checkProblems(page);
      await page.closeContext();
    });

test('create a job through the form and see its runs succeed', async () => {
  const page = await newPage();
  await signIn(page, ADMIN_TOKEN);
  await go(page, '/jobs');
  await page.click('[data-test=new-job]');
  await page.waitForSelector('#f-app', {timeout: WAIT_MS});
  await page.type('#f-app', 'demo');
  await page.type('#f-name', 'made-in-the-browser');
  await page.type('#f-description', 'Created by the browser test');
  await page.click('#f-cron', {clickCount: 3});
  await page.type('#f-cron', '*/2 * * * * ?');
  await page.click('#f-time_zone', {clickCount: 3});
  await page.type('#f-time_zone', 'Asia/Shanghai');
  await page.type('#f-handler', 'echo');
  await page.type('#f-param', 'hello from the form');
  await page.select('#f-routing_strategy', 'ROUTING_STRATEGY_ROUND');
  await page.click('#f-fail_retry_count', {clickCount: 3});
  await page.type('#f-fail_retry_count', '1');
  // The live preview answers in the job's zone.
  await waitText(page, '[data-test=preview-times] li', 'Asia/Shanghai');
  await shot(page, 'job-form');
  await page.click('[data-test=save]');
  await page.waitForFunction(() => /^#\/jobs\/\d+$/.test(location.hash), {timeout: WAIT_MS});
  await waitText(page, '[data-test=job-name]', 'made-in-the-browser');
  await waitRunStatus(page, 'SUCCEEDED');
  checkProblems(page);
  await page.closeContext();
});

test('edit a job, trigger it with a param, pause, resume and delete it', async () => {
  const page = await newPage();
  await signIn(page, ADMIN_TOKEN);
  await openJob(page, 'made-in-the-browser');
  await page.click('[data-test=edit]');
  await page.waitForSelector('#f-param', {timeout: WAIT_MS});
  await page.click('#f-param', {clickCount: 3});
  await page.type('#f-param', 'edited param');
  await page.click('[data-test=save]');
  await waitText(page, 'dl.kv dd', 'edited param');
  // Trigger with another param: a MANUAL run with that param.
  await page.click('[data-test=trigger]');
  await page.waitForSelector('dialog[open] [data-test=trigger-param]', {timeout: WAIT_MS});
  await page.$eval('[data-test=trigger-param]', (e) => { e.value = ''; });
  await page.type('[data-test=trigger-param]', 'one-off param');
  await page.click('dialog[open] [data-test=dialog-ok]');
  await page.waitForFunction(() => [...document.querySelectorAll('tr[data-status=SUCCEEDED]')]
      .some((tr) => tr.textContent.includes('one-off param')), {timeout: WAIT_MS});
  await page.click('[data-test=pause]');
  await waitText(page, 'h1 .badge', 'paused');
  await page.click('[data-test=resume]');
  await waitText(page, 'h1 .badge', 'enabled');
  await page.click('[data-test=delete]');
  await page.waitForSelector('dialog[open] [data-test=dialog-ok]', {timeout: WAIT_MS});
  await page.click('dialog[open] [data-test=dialog-ok]');
  await page.waitForFunction(() => location.hash === '#/jobs', {timeout: WAIT_MS});
  await waitJobRow(page, 'echo-every-second');
  assert(await page.$('tr[data-job=made-in-the-browser]') === null, 'the deleted job is listed');
  checkProblems(page);
  await page.closeContext();
});

test('an invalid cron shows its error next to the cron field', async () => {
  const page = await newPage();
  await signIn(page, ADMIN_TOKEN);
  await go(page, '/jobs/new');
  await page.waitForSelector('#f-app', {timeout: WAIT_MS});
  await page.type('#f-app', 'demo');
  await page.type('#f-name', 'bad-cron');
  await page.type('#f-handler', 'echo');
  await page.click('#f-cron', {clickCount: 3});
  await page.type('#f-cron', '61 * * * * ?');
  await page.click('[data-test=save]');
  await waitText(page, '.field[data-field=cron] .field-error', 'job.schedule.cron');
  const err = await textOf(page, '.field[data-field=cron] .field-error');
  assert(/61/.test(err), `the cron error names the bad value: ${err}`);
  // Nothing at the top, and the other fields carry no error.
  const others = await page.$$eval('.field:not([data-field=cron]) .field-error',
      (es) => es.map((e) => e.textContent).join(''));
  assert(others === '', `errors on other fields: ${others}`);
  // The preview says the same before saving.
  await page.waitForSelector('[data-test=preview-error]', {timeout: WAIT_MS});
  // Fixed, with a child job that does not exist: that error moves to the child jobs field.
  await page.click('#f-cron', {clickCount: 3});
  await page.type('#f-cron', '0 0 * * * ?');
  await page.type('#f-child_job_ids', '987654');
  await page.click('[data-test=save]');
  await waitText(page, '.field[data-field=child_job_ids] .field-error', '987654');
  const cronErr = await textOf(page, '.field[data-field=cron] .field-error');
  assert(cronErr === '', `the old cron error stays: ${cronErr}`);
  checkProblems(page);
  await page.closeContext();
});

test('open a running run, see its log grow, kill it and see KILLED; XSS log line is text',
    async () => {
      const page = await newPage();
      await signIn(page, ADMIN_TOKEN);
      const script = `for i in $(seq 1 600); do echo "tick $i ${XSS_LINE}"; sleep 0.2; done`;
      const {job} = await apiOk(page, 'JobAdminService', 'CreateJob', {job: {
        app: 'demo', name: 'long-script', handler: 'long-script', glueType: 'GLUE_TYPE_SCRIPT_SHELL',
        scriptSource: script, schedule: {none: {}}, enabled: true}});
      await go(page, '/jobs/' + job.id);
      await page.waitForSelector('[data-test=trigger]', {timeout: WAIT_MS});
      await page.click('[data-test=trigger]');
      await page.waitForSelector('dialog[open] [data-test=dialog-ok]', {timeout: WAIT_MS});
      await page.click('dialog[open] [data-test=dialog-ok]');
      await page.waitForSelector('tr[data-status=RUNNING] a', {timeout: WAIT_MS});
      await page.click('tr[data-status=RUNNING] a');
      await page.waitForSelector('[data-test=run-log]', {timeout: WAIT_MS});
      const count = () => page.$$eval('[data-test=run-log] .log-line', (l) => l.length);
      await page.waitForFunction(() => document.querySelectorAll('[data-test=run-log] .log-line')
          .length >= 3, {timeout: WAIT_MS});
      const before = await count();
      await page.waitForFunction((n) => document.querySelectorAll('[data-test=run-log] .log-line')
          .length > n, {timeout: WAIT_MS}, before);
      await waitText(page, '[data-test=run-log] .log-line', XSS_LINE);
      assert(await page.$('[data-test=run-log] script') === null, 'a <script> element in the log');
      await shot(page, 'run-detail');
      await page.click('[data-test=kill]');
      await page.waitForSelector('dialog[open] [data-test=dialog-ok]', {timeout: WAIT_MS});
      await page.click('dialog[open] [data-test=dialog-ok]');
      await page.waitForSelector('[data-test=run-status] [data-status=KILLED]', {timeout: WAIT_MS});
      await waitText(page, '[data-test=log-state]', '·');
      assert(await page.$('[data-test=kill]') === null, 'the Kill button is still there');
      // The log filter keeps the matching lines only.
      await page.type('[data-test=log-filter]', 'tick 1');
      const shown = await page.$$eval('[data-test=run-log] .log-line:not([hidden])',
          (ls) => ls.map((l) => l.textContent));
      assert(shown.length > 0 && shown.every((l) => l.includes('tick 1')), `filtered: ${shown}`);
      // Run again: the same job with this run's param, from the run's page.
      await page.click('[data-test=run-again]');
      await page.waitForSelector('dialog[open] [data-test=dialog-ok]', {timeout: WAIT_MS});
      await page.click('dialog[open] [data-test=dialog-ok]');
      await page.waitForFunction((id) => location.hash === '#/jobs/' + id, {timeout: WAIT_MS},
          job.id);
      await page.waitForSelector('tr[data-status=RUNNING] a', {timeout: WAIT_MS});
      checkProblems(page);
      await page.closeContext();
    });

test('XSS payloads in a job name render as text', async () => {
  const page = await newPage();
  await signIn(page, ADMIN_TOKEN);
  await page.evaluate(() => { window.__xss = 0; });
  await apiOk(page, 'JobAdminService', 'CreateJob', {job: {app: 'demo', name: XSS_NAME,
    description: XSS_LINE, handler: 'echo', param: XSS_LINE, schedule: {none: {}}, enabled: false}});
  await go(page, '/jobs');
  await waitJobRow(page, XSS_NAME);
  await openJob(page, XSS_NAME);
  await waitText(page, 'dl.kv dd', XSS_LINE);
  assert(await page.$('img[src=x]') === null, 'an <img src=x> element was created');
  assert(await page.$('main script') === null, 'a <script> element was created');
  checkProblems(page);  // no alert dialog opened, no page error
  await page.closeContext();
});

test('a viewer sees no edit buttons and a forged mutating call is refused', async () => {
  const page = await newPage();
  await open(page, '/');
  const made = await apiOk(page, 'TokenAdminService', 'CreateToken',
      {name: 'browser-viewer', role: 'ROLE_VIEWER', apps: ['demo']});
  await signIn(page, made.secret);
  await waitText(page, '[data-test=who]', 'VIEWER');
  assert(!(await page.$$eval('.topbar nav a', (as) => as.map((a) => a.textContent)))
      .includes('Tokens'), 'a viewer sees the Tokens page in the menu');
  await go(page, '/jobs');
  await waitJobRow(page, 'echo-every-second');
  for (const sel of ['new-job', 'trigger', 'pause', 'resume', 'edit', 'delete']) {
    assert(await page.$(`[data-test=${sel}]`) === null, `a viewer sees the ${sel} button`);
  }
  await openJob(page, 'echo-every-second');
  await waitRunStatus(page, 'SUCCEEDED');
  assert(await page.$('[data-test=trigger]') === null, 'a viewer sees Trigger on the job page');
  const jobId = await page.evaluate(() => location.hash.split('/')[2]);
  const forged = await api(page, 'JobAdminService', 'PauseJob', {id: jobId}, made.secret);
  assert(forged.status === 403 && forged.body && forged.body.code === 'permission_denied',
      `forged PauseJob: HTTP ${forged.status} ${JSON.stringify(forged.body)}`);
  const job = await apiOk(page, 'JobAdminService', 'GetJob', {id: jobId}, made.secret);
  assert(job.job.enabled === true, 'the job was paused by a viewer');
  checkProblems(page);
  await page.closeContext();
});

test('an operator sees buttons only on its own apps\' jobs', async () => {
  const page = await newPage();
  await open(page, '/');
  await apiOk(page, 'JobAdminService', 'CreateJob', {job: {app: 'billing', name: 'billing-close',
    handler: 'echo', schedule: {none: {}}, enabled: true}});
  const made = await apiOk(page, 'TokenAdminService', 'CreateToken',
      {name: 'browser-operator', role: 'ROLE_OPERATOR', apps: ['demo']});
  await signIn(page, made.secret);
  await waitText(page, '[data-test=who]', 'OPERATOR');
  await go(page, '/jobs');
  await waitJobRow(page, 'echo-every-second');
  assert(await page.$('tr[data-job=echo-every-second] [data-test=trigger]') !== null,
      'no Trigger on a demo job for a demo operator');
  // billing's jobs are outside the token's apps: the server does not list them at all.
  assert(await page.$('tr[data-job=billing-close]') === null, 'a billing job listed to a demo operator');
  assert(await page.$('[data-test=new-job]') !== null, 'no New job for an operator');
  assert(!(await page.$$eval('.topbar nav a', (as) => as.map((a) => a.textContent)))
      .includes('Tokens'), 'an operator sees the Tokens page in the menu');
  checkProblems(page);
  await page.closeContext();
});

test('the pages are served with a CSP that blocks inline script', async () => {
  const page = await newPage();
  const resp = await page.goto(BASE, {waitUntil: 'domcontentloaded'});
  const csp = resp.headers()['content-security-policy'] || '';
  assert(/script-src 'self'/.test(csp) && /frame-ancestors 'none'/.test(csp), `CSP: ${csp}`);
  await page.waitForSelector('#token', {timeout: WAIT_MS});
  await page.evaluate(() => {
    const s = document.createElement('script');
    s.textContent = 'window.__inline = 1;';
    document.body.append(s);
  });
  assert(await page.evaluate(() => window.__inline) === undefined, 'an inline script ran');
  page.problems = page.problems.filter((p) => !p.startsWith('CSP:'));  // the refusal we caused
  checkProblems(page);
  await page.closeContext();
});

test('admins create, edit and delete an app with manual addresses', async () => {
  const page = await newPage();
  await signIn(page, ADMIN_TOKEN);
  await go(page, '/executors');
  await page.waitForSelector('[data-test=new-app]', {timeout: WAIT_MS});
  await page.click('[data-test=new-app]');
  await page.waitForSelector('dialog[open] [data-test=app-name]', {timeout: WAIT_MS});
  await page.type('[data-test=app-name]', 'legacy');
  await page.type('[data-test=app-title]', 'Legacy boxes');
  await page.select('[data-test=app-type]', 'ADDRESS_TYPE_MANUAL');
  await page.type('[data-test=app-addresses]', '10.1.2.3:7200');
  await page.click('dialog[open] [data-test=dialog-ok]');
  await waitText(page, '.card', '10.1.2.3:7200');
  await page.evaluate(() => [...document.querySelectorAll('.card')]
      .find((c) => c.textContent.includes('Legacy boxes'))
      .querySelector('[data-test=edit-app]').click());
  await page.waitForSelector('dialog[open] [data-test=app-title]', {timeout: WAIT_MS});
  await page.click('[data-test=app-title]', {clickCount: 3});
  await page.type('[data-test=app-title]', 'Old boxes');
  await page.click('dialog[open] [data-test=dialog-ok]');
  await waitText(page, '.card', 'Old boxes');
  await page.evaluate(() => [...document.querySelectorAll('.card')]
      .find((c) => c.textContent.includes('Old boxes'))
      .querySelector('[data-test=delete-app]').click());
  await page.waitForSelector('dialog[open] [data-test=dialog-ok]', {timeout: WAIT_MS});
  await page.click('dialog[open] [data-test=dialog-ok]');
  await page.waitForFunction(() => ![...document.querySelectorAll('.card')]
      .some((c) => c.textContent.includes('Old boxes')), {timeout: WAIT_MS});
  checkProblems(page);
  await page.closeContext();
});

test('tokens page: create a token, the secret is shown once, revoke it', async () => {
  const page = await newPage();
  await signIn(page, ADMIN_TOKEN);
  await go(page, '/tokens');
  await page.click('[data-test=new-token]');
  await page.waitForSelector('dialog[open] [data-test=token-name]', {timeout: WAIT_MS});
  await page.type('[data-test=token-name]', 'ops-from-browser');
  await page.select('[data-test=token-role]', 'ROLE_OPERATOR');
  await page.type('[data-test=token-apps]', 'demo');
  await page.click('dialog[open] [data-test=dialog-ok]');
  await page.waitForSelector('dialog[open] [data-test=token-secret]', {timeout: WAIT_MS});
  const secret = await page.$eval('[data-test=token-secret]', (e) => e.value);
  assert(/^jw_[0-9a-f]{64}$/.test(secret), `secret ${secret}`);
  await shot(page, 'token-secret');
  await page.click('dialog[open] [data-test=dialog-ok]');
  await page.waitForSelector('tr[data-token=ops-from-browser] [data-test=revoke]', {timeout: WAIT_MS});
  await shot(page, 'tokens');
  await page.click('tr[data-token=ops-from-browser] [data-test=revoke]');
  await page.click('dialog[open] [data-test=dialog-ok]');
  await page.waitForFunction(() => !document.querySelector(
      'tr[data-token=ops-from-browser] [data-test=revoke]'), {timeout: WAIT_MS});
  const r = await api(page, 'JobAdminService', 'ListJobs', {}, secret);
  assert(r.status === 401, `a revoked token still works: HTTP ${r.status}`);
  checkProblems(page);
  await page.closeContext();
});

test('the language switch to 中文 works and is remembered', async () => {
  const page = await newPage();
  await signIn(page, ADMIN_TOKEN);
  await go(page, '/jobs');
  await waitJobRow(page, 'echo-every-second');
  await page.select('[data-test=lang]', 'zh-CN');
  await waitText(page, '.topbar nav a', '任务管理');
  await page.reload({waitUntil: 'domcontentloaded'});
  await waitText(page, '.topbar nav a', '任务管理');  // still signed in, still Chinese
  assert(await page.evaluate(() => document.documentElement.lang) === 'zh-CN', 'html lang');
  await page.select('[data-test=lang]', 'en');
  await waitText(page, '.topbar nav a', 'Jobs');
  checkProblems(page);
  await page.closeContext();
});

test('sign out clears sessionStorage', async () => {
  const page = await newPage();
  await signIn(page, ADMIN_TOKEN);
  assert(await page.evaluate(() => sessionStorage.length) > 0, 'no token in sessionStorage');
  assert(!(await page.evaluate(() => location.href)).includes(ADMIN_TOKEN), 'token in the URL');
  assert(await page.evaluate((t) => JSON.stringify(localStorage).includes(t), ADMIN_TOKEN) === false,
      'token in localStorage');
  await page.click('[data-test=signout]');
  await page.waitForSelector('#token', {timeout: WAIT_MS});
  assert(await page.evaluate(() => sessionStorage.length) === 0, 'sessionStorage not cleared');
  await page.reload({waitUntil: 'domcontentloaded'});
  await page.waitForSelector('#token', {timeout: WAIT_MS});
  checkProblems(page);
  await page.closeContext();
});

test('a token revoked while in use ends the session with the API\'s message', async () => {
  const page = await newPage();
  await open(page, '/');
  const made = await apiOk(page, 'TokenAdminService', 'CreateToken',
      {name: 'soon-revoked', role: 'ROLE_VIEWER'});
  await signIn(page, made.secret);
  await page.waitForSelector('[data-test=leader]', {timeout: WAIT_MS});
  await apiOk(page, 'TokenAdminService', 'RevokeToken', {id: made.token.id});
  // The dashboard's next refresh is refused: back to the sign-in form, saying why.
  await page.waitForSelector('#token', {timeout: WAIT_MS});
  await waitText(page, '.error-code', 'unauthenticated');
  assert(await page.evaluate(() => sessionStorage.length) === 0, 'the revoked token is kept');
  checkProblems(page);
  await page.closeContext();
});

test('the dashboard shows runs by status, lateness, failures and the leader', async () => {
  const page = await newPage();
  await signIn(page, ADMIN_TOKEN);
  await page.waitForSelector('[data-test=leader]', {timeout: WAIT_MS});
  await page.select('[data-test=chart-window]', '1h');
  await page.waitForSelector('svg.chart rect.seg.st-succeeded', {timeout: WAIT_MS});
  await page.waitForSelector('svg.chart rect.seg.st-failed', {timeout: WAIT_MS});
  await waitText(page, 'td', 'disk full on /var/data');  // a recent failure, as the API said it
  await waitText(page, '.stat-value', 'ms');  // lateness
  await shot(page, 'dashboard');
  await clickText(page, 'a', 'All failed runs');
  await page.waitForSelector('tr[data-status=FAILED]', {timeout: WAIT_MS});
  assert(await page.$('tr[data-status=SUCCEEDED]') === null, 'the failures filter lists successes');
  await shot(page, 'runs');
  // A time range: nothing was triggered in 2099.
  await go(page, '/runs?status=failures&from=2099-01-01T00:00:00');
  await waitText(page, 'td.empty', 'No runs');
  checkProblems(page);
  await page.closeContext();
});

test('run lists page with the API\'s page tokens', async () => {
  const page = await newPage();
  await signIn(page, ADMIN_TOKEN);
  await openJob(page, 'echo-every-second');  // one run a second: more than a page by now
  await page.waitForSelector('[data-test=next]:not([disabled])', {timeout: WAIT_MS});
  const firstIds = () => page.$$eval('tr[data-run]', (trs) => trs.map((tr) => Number(tr.dataset.run)));
  const page1 = await firstIds();
  assert(page1.length === 20, `page 1 has ${page1.length} runs`);
  await page.click('[data-test=next]');
  await page.waitForFunction((min) => {
    const ids = [...document.querySelectorAll('tr[data-run]')].map((tr) => Number(tr.dataset.run));
    return ids.length > 0 && Math.max(...ids) < min;
  }, {timeout: WAIT_MS}, Math.min(...page1));
  await waitText(page, '.pager', 'page 2');
  await page.click('[data-test=prev]');
  await waitText(page, '.pager', 'page 1');
  checkProblems(page);
  await page.closeContext();
});

process.exit((await run()) ? 0 : 1);
