// Run detail: status, timeline (scheduled → triggered → started → ended), executor, messages,
// the log (followed live while the run is PENDING/RUNNING) and Kill.

import {h, put} from './dom.js';
import {jobs} from './api.js';
import {t, enumLabel} from './i18n.js';
import {canWrite} from './session.js';
import {timeEl, between, formatMs, parseTs} from './time.js';
import {card, kv, errorBox, runStatus, spinner} from './widgets.js';
import {confirmDialog} from './dialog.js';
import {RunLogView} from './run_log_view.js';
import {jobLink} from './job_names.js';
import {triggerDialog} from './job_actions.js';
import {RunStatus, RoutingStrategy, TriggerType, OPEN_STATUSES} from './enums.js';

const OPEN = new Set(OPEN_STATUSES.map((s) => RunStatus.name(s)));

function timeline(r) {
  const steps = [
    ['run.scheduled', r.scheduledTime], ['run.triggered', r.triggerTime],
    ['run.started', r.startTime], ['run.ended', r.endTime],
  ];
  const items = [];
  let prev = null;
  for (const [key, ts] of steps) {
    const set = parseTs(ts) !== null;
    const gap = prev && set ? formatMs(between(prev, ts)) : '';
    if (items.length) items.push(h('li', {class: 'gap muted'}, gap ? '+' + gap : '→'));
    items.push(h('li', {class: set ? 'step done' : 'step', dataset: {step: key}},
        h('div', {class: 'step-name'}, t(key)), h('div', null, timeEl(ts, {withMs: true}))));
    if (set) prev = ts;
  }
  return h('ol', {class: 'timeline', 'data-test': 'timeline'}, items);
}

export async function render(view, ctx) {
  const id = ctx.params[0];
  put(view, spinner());
  let run;
  try {
    run = (await jobs('GetRun', {id})).run;
  } catch (e) {
    put(view, errorBox(e));
    return;
  }
  const head = h('div', {class: 'page-head'});
  const summary = h('div');
  const actionErr = h('div');
  const log = new RunLogView(ctx, id, () => !OPEN.has(run.status));

  function draw() {
    const kill = OPEN.has(run.status) && canWrite(run.app) ?
      h('button', {class: 'btn danger', 'data-test': 'kill', onclick: () => confirmDialog(
          t('run.kill.title', {id}), t('run.kill.confirm'), t('run.kill'), async () => {
            run = (await jobs('KillRun', {id})).run || run;
            draw();
          })}, t('run.kill')) : null;
    // Another run of the job with this run's param (editable before it goes).
    const again = !OPEN.has(run.status) && canWrite(run.app) ?
      h('button', {class: 'btn', 'data-test': 'run-again', onclick: () => triggerDialog(
          {id: run.jobId, name: '#' + run.jobId, param: run.param || ''},
          () => { location.hash = '#/jobs/' + run.jobId; })}, t('run.again')) : null;
    put(head, h('h1', null, h('span', {class: 'muted'}, t('col.run') + ' '), '#' + run.id, ' ',
        h('span', {'data-test': 'run-status'}, runStatus(run.status))),
    h('div', {class: 'actions'}, h('span', {class: 'muted'}, t('col.job')), jobLink(run.jobId), again, kill));
    put(summary, timeline(run), kv([
      [t('col.app'), run.app], [t('field.handler'), run.handler ? h('code', null, run.handler) : ''],
      [t('col.trigger'), enumLabel(TriggerType.prefix, run.triggerType)],
      [t('col.attempt'), String(run.attempt || 0)],
      run.shardTotal > 1 ? [t('run.shard'), `${run.shardIndex || 0}/${run.shardTotal}`] : null,
      [t('col.executor'), run.executorAddress || ''],
      [t('field.routing'), enumLabel(RoutingStrategy.prefix, run.routingStrategy)],
      [t('field.param'), run.param ? h('code', {class: 'pre'}, run.param) : ''],
      [t('run.triggermsg'), run.triggerMessage ?
        h('span', {class: 'pre', 'data-test': 'trigger-message'}, run.triggerMessage) : ''],
      [t('run.resultcode'), run.resultCode ? String(run.resultCode) : ''],
      [t('run.resultmsg'), run.resultMessage ?
        h('span', {class: 'pre', 'data-test': 'result-message'}, run.resultMessage) : ''],
    ]));
  }
  draw();
  put(view, head, actionErr, card(t('run.summary'), summary), card(t('run.log'), log.el));
  // Follow the run until it is over.
  ctx.poll(async () => {
    if (!OPEN.has(run.status)) return;
    try {
      run = (await jobs('GetRun', {id})).run || run;
      draw();
      put(actionErr);
    } catch (e) {
      put(actionErr, errorBox(e));
    }
  }, 1000);
}
