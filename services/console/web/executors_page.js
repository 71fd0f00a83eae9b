// Apps and their online executors: running/queued counts, capacity and last beat; an operator
// of the app drains an executor (no new runs routed to it) or undoes it with one click.

import {h, put, link} from './dom.js';
import {apps, registry} from './api.js';
import {t, enumLabel} from './i18n.js';
import {agoEl, timeEl} from './time.js';
import {card, table, errorBox, spinner} from './widgets.js';
import {isAdmin, canWrite} from './session.js';
import {appDialog, deleteAppDialog} from './app_dialogs.js';
import {AddressType} from './enums.js';

const REFRESH_MS = 3000;

function drainCell(x, reload) {
  const state = h('span', {class: x.draining ? 'bad' : 'ok', title: x.drainReason || ''},
      x.draining ? t('ex.drained') : t('ex.routed'));
  if (!canWrite(x.app)) return state;
  const button = h('button', {class: 'btn small', 'data-test': x.draining ? 'undrain' : 'drain',
    onclick: async () => {
      button.disabled = true;
      try {
        await apps('SetExecutorDraining', {app: x.app, address: x.address, draining: !x.draining});
      } catch (e) {
        put(button.parentNode, state, errorBox(e));
        return;
      }
      reload();
    }}, x.draining ? t('ex.undrain') : t('ex.drain'));
  return h('span', null, state, ' ', button);
}

function executorsTable(list, reload) {
  return table([
    {title: t('col.address'), cell: (x) => h('code', null, x.address)},
    {title: t('ex.running'), cls: 'num', cell: (x) => String(x.running || 0)},
    {title: t('ex.queued'), cls: 'num', cell: (x) => String(x.queued || 0)},
    {title: t('ex.capacity'), cls: 'num', cell: (x) => String(x.capacity || 0)},
    {title: t('ex.lastbeat'), cell: (x) => agoEl(x.lastBeatTime)},
    {title: t('ex.registered'), cell: (x) => timeEl(x.registerTime)},
    {title: t('ex.handlers'), cls: 'wrap', cell: (x) => (x.handlers || []).join(', ')},
    {title: t('ex.scripts'), cell: (x) => (x.allowScripts ? t('common.yes') : t('common.no'))},
    {title: t('ex.version'), cell: (x) => x.sdkVersion || ''},
    {title: t('ex.protocol'), cell: (x) => (x.labels || {})['jobwheel.protocol'] || 'jobwheel'},
    {title: t('ex.state'), cell: (x) => drainCell(x, reload)},
    {title: t('ex.replica'), cell: (x) => x.registryReplica || ''},
  ], list, {empty: t('ex.none'), rowAttrs: (x) => ({'data-executor': x.address})});
}

async function load(body, reload) {
  const [appList, execs] = await Promise.all([
    apps('ListApps', {}).catch((e) => ({error: e})),
    registry('ListExecutors', {}),
  ]);
  const byApp = new Map();
  for (const a of appList.apps || []) byApp.set(a.name, {app: a, executors: []});
  for (const x of execs.executors || []) {
    if (!byApp.has(x.app)) byApp.set(x.app, {app: {name: x.app}, executors: []});
    byApp.get(x.app).executors.push(x);
  }
  const sections = [...byApp.values()].sort((a, b) => a.app.name.localeCompare(b.app.name))
      .map(({app, executors}) => {
        executors.sort((a, b) => a.address.localeCompare(b.address));
        const manual = app.addressType === AddressType.name('MANUAL');
        return card(null,
            h('div', {class: 'card-head'}, h('h2', null, app.name),
                app.title ? h('span', {class: 'muted'}, app.title) : null,
                h('span', {class: 'badge'}, enumLabel(AddressType.prefix, app.addressType || AddressType.default)),
                h('span', {class: executors.length ? 'ok' : 'bad'},
                    t('ex.online', {n: executors.length})),
                link('/jobs?app=' + encodeURIComponent(app.name), t('ex.jobs')),
                isAdmin() && app.addressType ? h('span', {class: 'actions push'},
                    h('button', {class: 'btn small', 'data-test': 'edit-app',
                      onclick: () => appDialog(app, reload)}, t('job.edit')),
                    h('button', {class: 'btn small danger', 'data-test': 'delete-app',
                      onclick: () => deleteAppDialog(app, reload)}, t('job.delete'))) : null),
            manual ? h('p', {class: 'muted small'}, t('ex.manual'), ' ',
                (app.manualAddresses || []).join(', ')) : null,
            executorsTable(executors, reload));
      });
  put(body, appList.error ? errorBox(appList.error) : null,
      sections.length ? sections : h('div', {class: 'card muted'}, t('ex.noapps')));
}

export function render(view, ctx) {
  const body = h('div', null, spinner());
  const reload = () => load(body, reload).catch((e) => put(body, errorBox(e)));
  put(view, h('div', {class: 'page-head'}, h('h1', null, t('nav.executors')),
      isAdmin() ? h('button', {class: 'btn primary', 'data-test': 'new-app',
        onclick: () => appDialog(null, reload)}, t('app.new')) : null), body);
  ctx.poll(reload, REFRESH_MS);
}
