// Job detail: its configuration, next fire times, and its runs.

import {h, put, link} from './dom.js';
import {jobs} from './api.js';
import {t, enumLabel} from './i18n.js';
import {timeEl, durationSeconds} from './time.js';
import {card, kv, errorBox, enabledBadge, spinner} from './widgets.js';
import {scheduleEl} from './job_format.js';
import {jobButtons} from './job_actions.js';
import {previewBody} from './cron_preview.js';
import {runsTable} from './runs_table.js';
import {BlockStrategy, GlueType, MisfireStrategy, RoutingStrategy, isScriptGlue} from './enums.js';

function config(j) {
  const script = isScriptGlue(j.glueType);
  return kv([
    [t('field.app'), j.app], [t('field.description'), j.description || ''],
    [t('field.owner'), j.owner || ''],
    [t('field.alarm'), (j.alarmContacts || []).join(', ')],
    [t('col.schedule'), scheduleEl(j.schedule)],
    [t('field.labels'), Object.entries(j.labels || {}).sort().map(([k, v]) => `${k}=${v}`)
        .join(', ')],
    j.runRetention ? [t('field.retention'), [
      j.runRetention.maxAge ? `${durationSeconds(j.runRetention.maxAge) / 86400} d` : '',
      j.runRetention.keepLast ? t('job.keeplast', {n: j.runRetention.keepLast}) : '',
    ].filter(Boolean).join(', ')] : null,
    [t('field.glue'), enumLabel(GlueType.prefix, j.glueType || GlueType.default)],
    script ? null : [t('field.handler'), h('code', null, j.handler || '')],
    [t('field.param'), j.param ? h('code', {class: 'pre'}, j.param) : ''],
    [t('field.routing'), enumLabel(RoutingStrategy.prefix, j.routingStrategy || RoutingStrategy.default)],
    [t('field.block'), enumLabel(BlockStrategy.prefix, j.blockStrategy || BlockStrategy.default)],
    [t('field.misfire'), enumLabel(MisfireStrategy.prefix, j.misfireStrategy || MisfireStrategy.default)],
    [t('field.timeout'), durationSeconds(j.timeout) ? `${durationSeconds(j.timeout)} s` : t('job.notimeout')],
    [t('field.retries'), String(j.failRetryCount || 0)],
    [t('field.children'), (j.childJobIds || []).length ?
      h('span', null, j.childJobIds.map((c, i) => [i ? ', ' : '', link('/jobs/' + c, '#' + c)])) : ''],
    [t('col.nextfire'), timeEl(j.nextFireTime)],
    [t('job.created'), timeEl(j.createTime)], [t('job.updated'), timeEl(j.updateTime)],
  ]);
}

export async function render(view, ctx) {
  const id = ctx.params[0];
  put(view, spinner());
  let job;
  try {
    job = (await jobs('GetJob', {id})).job;
  } catch (e) {
    put(view, errorBox(e));
    return;
  }
  const next = h('div', null, spinner());
  const zone = job.schedule && job.schedule.cron ? job.schedule.cron.timeZone || 'UTC' : 'UTC';
  if (job.schedule && !job.schedule.none) {
    jobs('PreviewFireTimes', {schedule: job.schedule, count: 5}).then((r) => {
      put(next, previewBody(r, zone));
      if (!job.enabled) next.prepend(h('div', {class: 'muted small'}, t('job.pausednote')));
    }).catch((e) => put(next, errorBox(e)));
  } else {
    put(next, h('div', {class: 'muted'}, t('sched.nonehelp')));
  }
  const runs = runsTable(ctx, {base: {jobId: id}});
  // A fresh render with a fresh page context (the old one's timers stop).
  const rerender = () => window.dispatchEvent(new HashChangeEvent('hashchange'));
  put(view,
      h('div', {class: 'page-head'},
          h('h1', null, h('span', {class: 'muted'}, '#' + job.id + ' '),
              h('span', {'data-test': 'job-name'}, job.name), ' ', enabledBadge(job.enabled)),
          jobButtons(job, rerender, {onDeleted: () => { location.hash = '#/jobs'; }})),
      scheduleErrorBox(job),
      h('div', {class: 'grid-2'},
          card(t('job.config'), config(job)),
          card(t('job.nextfires'), next)),
      script(job),
      card(t('job.runs'), runs.el));
}

// Set when the scheduler stopped the job because its stored schedule cannot be computed. The
// reason comes from the server: set as text only.
function scheduleErrorBox(j) {
  if (!j.scheduleError) return null;
  const label = document.createElement('span');
  label.className = 'error-code';
  label.textContent = t('job.scheduleerror');
  const msg = document.createElement('span');
  msg.className = 'error-msg';
  msg.textContent = j.scheduleError;
  const box = h('div', {class: 'error', role: 'alert', 'data-test': 'schedule-error'});
  box.append(label, document.createTextNode(' '), msg);
  return box;
}

function script(j) {
  if (!j.scriptSource) return null;
  return card(t('field.script') + ' · ' + t('field.scriptversion', {n: j.scriptVersion || 0}),
      h('pre', {class: 'code'}, j.scriptSource));
}
