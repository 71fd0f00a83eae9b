// A table of runs with a status filter and paging (ListRuns page tokens). Used by the job
// detail page (one job) and the runs page (all jobs, app filter).

import {h, put, link, replaceQuery} from './dom.js';
import {jobs} from './api.js';
import {t, enumLabel} from './i18n.js';
import {timeEl, between, formatMs} from './time.js';
import {table, Pager, errorBox, runStatus} from './widgets.js';
import {jobLink} from './job_names.js';
import {RunStatus, TriggerType, FAILURE_STATUSES} from './enums.js';

// Returns {el, load}; base is the fixed part of the request ({jobId}) and withApp adds an app
// filter. The table reloads itself every refreshMs while ctx is alive.
export function runsTable(ctx, {base = {}, withApp = false, refreshMs = 3000, pageSize = 20}) {
  const status = h('select', {name: 'status', 'data-test': 'filter-status'},
      h('option', {value: ''}, t('runs.allstatuses')),
      h('option', {value: 'failures'}, t('runs.failures')),
      RunStatus.values.map((s) => h('option', {value: s}, enumLabel('', s))));
  if (ctx.query && ctx.query.get('status')) status.value = ctx.query.get('status');
  const q = ctx.query || new URLSearchParams();
  const app = withApp ? h('input', {name: 'app', placeholder: t('col.app'),
    value: q.get('app') || '', 'data-test': 'filter-app'}) : null;
  // Triggered in [from, to), in the browser's zone.
  const from = h('input', {type: 'datetime-local', name: 'from', step: 1, value: q.get('from') || '',
    title: t('runs.from'), 'data-test': 'filter-from'});
  const to = h('input', {type: 'datetime-local', name: 'to', step: 1, value: q.get('to') || '',
    title: t('runs.to'), 'data-test': 'filter-to'});
  const body = h('div');
  const pager = new Pager(() => load());

  let seq = 0;  // Only the latest request's answer is shown (a poll may race a page change).
  async function load() {
    const mine = ++seq;
    const req = {...base, pageSize, pageToken: pager.token};
    if (status.value === 'failures') {
      req.statuses = FAILURE_STATUSES.map((s) => RunStatus.name(s));
    } else if (status.value) {
      req.statuses = [RunStatus.name(status.value)];
    }
    if (app && app.value.trim()) req.app = app.value.trim();
    if (from.value) req.startTime = new Date(from.value).toISOString();
    if (to.value) req.endTime = new Date(to.value).toISOString();
    try {
      const r = await jobs('ListRuns', req);
      if (!ctx.alive || mine !== seq) return;
      const cols = [
        {title: t('col.run'), cls: 'num', cell: (x) => link('/runs/' + x.id, '#' + x.id)},
        base.jobId ? null : {title: t('col.job'), cell: (x) => jobLink(x.jobId)},
        withApp ? {title: t('col.app'), cell: (x) => x.app || ''} : null,
        {title: t('col.status'), cell: (x) => runStatus(x.status)},
        {title: t('col.trigger'), cell: (x) => enumLabel(TriggerType.prefix, x.triggerType)},
        {title: t('col.attempt'), cls: 'num', cell: (x) => String(x.attempt || 0)},
        {title: t('col.executor'), cell: (x) => x.executorAddress || ''},
        {title: t('col.scheduled'), cell: (x) => timeEl(x.scheduledTime)},
        {title: t('col.duration'), cls: 'num', cell: (x) =>
          formatMs(between(x.startTime || x.triggerTime, x.endTime))},
        {title: t('col.result'), cls: 'wrap', cell: (x) => x.resultMessage || ''},
      ].filter(Boolean);
      put(body, table(cols, r.runs || [], {empty: t('runs.empty'),
        rowAttrs: (x) => ({'data-run': x.id, 'data-status': RunStatus.short(x.status)})}));
      pager.update(r.nextPageToken, (r.runs || []).length);
    } catch (e) {
      if (mine === seq) put(body, errorBox(e));
    }
  }
  const refilter = () => {
    replaceQuery({status: status.value, app: app ? app.value.trim() : '', from: from.value,
      to: to.value});
    pager.reset();
    load();
  };
  status.addEventListener('change', refilter);
  if (app) app.addEventListener('change', refilter);
  from.addEventListener('change', refilter);
  to.addEventListener('change', refilter);
  // Only the first page follows new runs; an older page stays still while it is read.
  ctx.poll(() => (pager.stack.length === 1 ? load() : null), refreshMs);
  return {el: h('div', null, h('div', {class: 'filters'}, status, app,
      h('label', {class: 'muted small'}, t('runs.from')), from,
      h('label', {class: 'muted small'}, t('runs.to')), to), body, pager.el), load};
}
