// Dashboard: jobs and executors per app, runs of the last 24 h by status, lateness, recent
// failures and the current leader. Refreshes itself every few seconds.

import {h, put, link, replaceQuery} from './dom.js';
import {jobs, registry, leadership} from './api.js';
import {t} from './i18n.js';
import {timeEl, agoEl, durationSeconds, formatMs} from './time.js';
import {card, errorBox, table, runStatus, spinner} from './widgets.js';
import {runsChart} from './chart.js';
import {jobLink} from './job_names.js';
import {RunStatus, FAILURE_STATUSES} from './enums.js';

const REFRESH_MS = 5000;

// Runs fn and puts its result (or the API's error) into slot.
async function fill(slot, fn) {
  try {
    put(slot, await fn());
  } catch (e) {
    put(slot, errorBox(e));
  }
}

async function appsTable() {
  // Each half shows what it can when the other fails (e.g. an older scheduler).
  const [counts, execs] = await Promise.all([
    jobs('CountJobs', {}).catch((e) => ({error: e})),
    registry('ListExecutors', {}).catch((e) => ({error: e})),
  ]);
  const online = {};
  for (const x of execs.executors || []) online[x.app] = (online[x.app] || 0) + 1;
  const rows = (counts.apps || []).map((a) => ({...a, online: online[a.app] || 0}));
  for (const app of Object.keys(online)) {
    if (!rows.some((r) => r.app === app)) rows.push({app, online: online[app]});
  }
  return [
    table([
      {title: t('col.app'), cell: (r) => link('/jobs?app=' + encodeURIComponent(r.app), r.app)},
      {title: t('dash.jobs'), cls: 'num', cell: (r) => String(Number(r.jobCount || 0))},
      {title: t('dash.enabled'), cls: 'num', cell: (r) => String(Number(r.enabledJobCount || 0))},
      {title: t('dash.online'), cls: 'num', cell: (r) => h('span',
          {class: r.online ? 'ok' : 'bad'}, String(r.online))},
      {title: t('dash.running'), cls: 'num', cell: (r) => String(Number(r.runningRunCount || 0))},
      {title: t('dash.pending'), cls: 'num', cell: (r) => String(Number(r.pendingRunCount || 0))},
    ], rows),
    counts.error ? errorBox(counts.error) : null,
    execs.error ? errorBox(execs.error) : null,
  ];
}

function latencyStat(label, d) {
  return h('div', {class: 'stat'}, h('div', {class: 'stat-label'}, label),
      h('div', {class: 'stat-value'}, d ? formatMs(durationSeconds(d) * 1000) : '—'));
}

// Chart windows: [key, window seconds, bucket seconds].
const WINDOWS = [['1h', 3600, 60], ['6h', 6 * 3600, 300], ['24h', 86400, 3600],
  ['7d', 7 * 86400, 6 * 3600]];

function windowOf(key) {
  return WINDOWS.find((w) => w[0] === key) || WINDOWS[2];
}

// Runs by status over the chosen window, in buckets aligned on the bucket width.
async function statsCard(key) {
  const [, span, bucket] = windowOf(key);
  const start = Math.floor((Date.now() / 1000 - span) / bucket) * bucket;
  const s = await jobs('GetRunStats', {startTime: new Date(start * 1000).toISOString(),
    bucket: `${bucket}s`});
  const lat = s.lateness || {};
  const byStatus = {};
  for (const c of s.statusCounts || []) byStatus[RunStatus.short(c.status)] = Number(c.count);
  const failed = FAILURE_STATUSES.reduce((n, st) => n + (byStatus[st] || 0), 0);
  return [
    h('div', {class: 'stats'},
        h('div', {class: 'stat'}, h('div', {class: 'stat-label'}, t('dash.runs')),
            h('div', {class: 'stat-value', 'data-test': 'runs-total'}, String(Number(s.total || 0)))),
        h('div', {class: 'stat'}, h('div', {class: 'stat-label'}, t('dash.succeeded')),
            h('div', {class: 'stat-value ok'}, String(byStatus.SUCCEEDED || 0))),
        h('div', {class: 'stat'}, h('div', {class: 'stat-label'}, t('dash.failures')),
            h('div', {class: failed ? 'stat-value bad' : 'stat-value'}, String(failed))),
        latencyStat(t('dash.p50'), lat.p50), latencyStat(t('dash.p99'), lat.p99),
        latencyStat(t('dash.max'), lat.max)),
    runsChart(s.buckets || [], {dates: span > 86400}),
  ];
}

async function failuresTable() {
  const r = await jobs('ListRuns', {statuses: FAILURE_STATUSES.map((st) => RunStatus.name(st)),
    pageSize: 10});
  return table([
    {title: t('col.run'), cell: (x) => link('/runs/' + x.id, '#' + x.id)},
    {title: t('col.job'), cell: (x) => jobLink(x.jobId)},
    {title: t('col.app'), cell: (x) => x.app || ''},
    {title: t('col.status'), cell: (x) => runStatus(x.status)},
    {title: t('col.triggered'), cell: (x) => timeEl(x.triggerTime)},
    {title: t('col.result'), cls: 'wrap', cell: (x) => x.resultMessage || x.triggerMessage || ''},
  ], r.runs || [], {empty: t('dash.nofailures')});
}

async function leaderCard() {
  const l = await leadership('GetLeader', {});
  if (!l.holderId) return h('div', {class: 'bad'}, t('dash.noleader'));
  return h('dl', {class: 'kv'},
      h('dt', null, t('dash.leader')), h('dd', {'data-test': 'leader'}, l.holderId),
      h('dt', null, t('dash.since')), h('dd', null, agoEl(l.since)),
      h('dt', null, t('dash.epoch')), h('dd', null, String(l.epoch || '0')));
}

export function render(view, ctx) {
  let win = windowOf(ctx.query.get('window') || localStorage.getItem('jobwheel.window') || '24h')[0];
  const winSel = h('select', {class: 'window', 'data-test': 'chart-window',
    'aria-label': t('dash.window')}, WINDOWS.map(([k]) => h('option', {value: k}, t('dash.w' + k))));
  winSel.value = win;
  const apps = h('div', null, spinner());
  const stats = h('div', null, spinner());
  const failures = h('div', null, spinner());
  const leader = h('div', null, spinner());
  const updated = h('span', {class: 'muted small'});
  put(view,
      h('div', {class: 'page-head'}, h('h1', null, t('nav.dashboard')), updated),
      h('div', {class: 'grid-2'},
          card(t('dash.apps'), apps),
          card(t('dash.leadership'), leader)),
      h('section', {class: 'card'}, h('div', {class: 'head-row'}, h('h2', null, t('dash.chart')),
          winSel), stats),
      card(t('dash.recentfailures'), failures,
          h('div', {class: 'more'}, link('/runs?status=failures', t('dash.allfailures')))));
  winSel.addEventListener('change', () => {
    win = winSel.value;
    localStorage.setItem('jobwheel.window', win);
    replaceQuery({window: win});
    fill(stats, () => statsCard(win));
  });
  ctx.poll(async () => {
    await Promise.all([fill(apps, appsTable), fill(stats, () => statsCard(win)),
      fill(failures, failuresTable), fill(leader, leaderCard)]);
    put(updated, t('dash.updated'), ' ', timeEl(new Date().toISOString()));
  }, REFRESH_MS);
}
