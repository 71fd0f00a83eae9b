// Job actions shared by the jobs list and the job detail page: trigger with a param, pause /
// resume, delete with confirmation. Buttons appear only for a role that may use them.

import {h} from './dom.js';
import {jobs, registry} from './api.js';
import {t} from './i18n.js';
import {canWrite, canScript} from './session.js';
import {modal, confirmDialog} from './dialog.js';
import {isScriptGlue} from './enums.js';

export function mayChange(job) {
  return canWrite(job.app) && (!isScriptGlue(job.glueType) || canScript());
}

export function triggerDialog(job, onDone) {
  const param = h('textarea', {name: 'param', rows: 3, 'data-test': 'trigger-param'});
  param.value = job.param || '';
  const shard = h('input', {name: 'shard', placeholder: 'i/n', size: 6});
  const addr = h('input', {name: 'executor', placeholder: 'host:port', list: 'trigger-executors'});
  // Suggest the app's online executors (when the job's app is known and listing is allowed).
  const online = h('datalist', {id: 'trigger-executors'});
  if (job.app) {
    registry('ListExecutors', {app: job.app}).then((r) => online.append(...(r.executors || [])
        .map((x) => h('option', {value: x.address})))).catch(() => {});
  }
  let fireId = '';
  return modal({
    title: t('job.trigger.title', {name: job.name}),
    body: h('div', {class: 'form-grid'},
        h('label', null, t('field.param')), param,
        h('label', null, t('job.trigger.shard')), shard,
        h('label', null, t('job.trigger.executor')), addr, online),
    okText: t('job.trigger'),
    onOk: async () => {
      const req = {id: job.id, param: param.value};
      if (shard.value.trim()) req.shardParam = shard.value.trim();
      if (addr.value.trim()) req.executorAddress = addr.value.trim();
      const r = await jobs('TriggerJob', req);
      fireId = r.fireId;
    },
  }).then((ok) => { if (ok && onDone) onDone(fireId); });
}

// Buttons for one job; onChange() is called after a change (re-render).
export function jobButtons(job, onChange, {showEdit = true, onDeleted} = {}) {
  if (!mayChange(job)) return h('span');
  const b = (label, cls, test, fn) => h('button', {class: `btn small ${cls}`, type: 'button',
    'data-test': test, onclick: fn}, label);
  return h('span', {class: 'actions'},
      b(t('job.trigger'), '', 'trigger', () => triggerDialog(job, onChange)),
      job.enabled ?
        b(t('job.pause'), '', 'pause', async () => {
          await runOrReport(() => jobs('PauseJob', {id: job.id}));
          onChange();
        }) :
        b(t('job.resume'), '', 'resume', async () => {
          await runOrReport(() => jobs('ResumeJob', {id: job.id}));
          onChange();
        }),
      showEdit ? h('a', {class: 'btn small', href: `#/jobs/${job.id}/edit`, 'data-test': 'edit'},
          t('job.edit')) : null,
      b(t('job.delete'), 'danger', 'delete', () => confirmDialog(
          t('job.delete.title', {id: job.id}), t('job.delete.confirm', {name: job.name}),
          t('job.delete'), () => jobs('DeleteJob', {id: job.id}))
          .then((ok) => { if (ok) (onDeleted || onChange)(); })));
}

// Shows an action's error in a dialog (the action is a button, not a form).
async function runOrReport(fn) {
  try {
    await fn();
  } catch (e) {
    await modal({title: t('common.failed'), body: h('p', {class: 'error-msg'},
        `${e.code}: ${e.message}`)});
  }
}
