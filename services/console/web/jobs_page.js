// Jobs: search and filter (app, name, enabled), paging with page tokens, actions per job.

import {h, put, link, debounce, replaceQuery} from './dom.js';
import {jobs} from './api.js';
import {t} from './i18n.js';
import {canWrite} from './session.js';
import {timeEl} from './time.js';
import {table, Pager, errorBox, enabledBadge, spinner} from './widgets.js';
import {scheduleEl} from './job_format.js';
import {jobButtons} from './job_actions.js';
import {GlueType, RoutingStrategy} from './enums.js';

const PAGE_SIZE = 20;

export function render(view, ctx) {
  const q = ctx.query;
  const app = h('input', {name: 'app', placeholder: t('col.app'), value: q.get('app') || '',
    list: 'app-names', 'data-test': 'filter-app'});
  const name = h('input', {name: 'name', placeholder: t('jobs.namecontains'),
    value: q.get('name') || '', 'data-test': 'filter-name'});
  const labels = h('input', {name: 'labels', placeholder: 'team=payments,tier!=batch',
    value: q.get('labels') || '', title: t('jobs.labelshelp'), 'data-test': 'filter-labels'});
  const enabled = h('select', {name: 'enabled', 'data-test': 'filter-enabled'},
      h('option', {value: ''}, t('jobs.all')),
      h('option', {value: 'true'}, t('job.enabled')),
      h('option', {value: 'false'}, t('job.paused')));
  enabled.value = q.get('enabled') || '';
  const apps = h('datalist', {id: 'app-names'});
  const body = h('div', null, spinner());
  const pager = new Pager(() => load());

  let seq = 0;  // Only the latest request's answer is shown (filters typed quickly may race).
  async function load() {
    const mine = ++seq;
    const req = {pageSize: PAGE_SIZE, pageToken: pager.token};
    if (app.value.trim()) req.app = app.value.trim();
    if (name.value.trim()) req.nameContains = name.value.trim();
    if (enabled.value) req.enabled = enabled.value === 'true';
    if (labels.value.trim()) req.labelSelector = labels.value.trim();
    try {
      const r = await jobs('ListJobs', req);
      if (mine !== seq) return;
      const rows = r.jobs || [];
      put(body, table([
        {title: t('col.id'), cls: 'num', cell: (j) => link('/jobs/' + j.id, j.id)},
        {title: t('col.name'), cell: (j) => link('/jobs/' + j.id, j.name),
          cls: 'name'},
        {title: t('col.app'), cell: (j) => j.app},
        {title: t('col.schedule'), cell: (j) => scheduleEl(j.schedule)},
        {title: t('col.handler'), cell: (j) => j.glueType && j.glueType !== GlueType.name('HANDLER') ?
          GlueType.short(j.glueType, 'HANDLER') : (j.handler || '')},
        {title: t('col.routing'), cell: (j) => RoutingStrategy.short(j.routingStrategy, 'FIRST')},
        {title: t('col.nextfire'), cell: (j) => timeEl(j.nextFireTime)},
        {title: t('col.state'), cell: (j) => enabledBadge(j.enabled)},
        {title: '', cls: 'right', cell: (j) => jobButtons(j, load)},
      ], rows, {empty: t('jobs.empty'), rowAttrs: (j) => ({'data-job': j.name})}));
      pager.update(r.nextPageToken, rows.length);
    } catch (e) {
      if (mine === seq) put(body, errorBox(e));
    }
  }

  const refilter = () => {
    replaceQuery({app: app.value.trim(), name: name.value.trim(), enabled: enabled.value,
      labels: labels.value.trim()});
    pager.reset();
    load();
  };
  app.addEventListener('input', debounce(refilter, 300));
  name.addEventListener('input', debounce(refilter, 300));
  labels.addEventListener('input', debounce(refilter, 500));
  enabled.addEventListener('change', refilter);

  put(view,
      h('div', {class: 'page-head'}, h('h1', null, t('nav.jobs')),
          canWrite() ? h('a', {class: 'btn primary', href: '#/jobs/new', 'data-test': 'new-job'},
              t('jobs.new')) : null),
      h('div', {class: 'card'},
          h('div', {class: 'filters'}, app, apps, name, labels, enabled), body, pager.el));
  jobs('CountJobs', {}).then((r) => put(apps, (r.apps || []).map((a) =>
    h('option', {value: a.app})))).catch(() => {});
  load();
}
