// Create / edit a job: every field of jobwheel.v1.Job. The server validates; each
// INVALID_ARGUMENT message ("job.schedule.cron: ...") is shown next to the field it names.

import {h, put} from './dom.js';
import {jobs} from './api.js';
import {t, enumLabel} from './i18n.js';
import {canScript} from './session.js';
import {errorBox, spinner} from './widgets.js';
import {durationSeconds} from './time.js';
import {CronPreview, zoneNames} from './cron_preview.js';
import {fieldFor, fieldError} from './job_form_errors.js';
import {httpSection} from './http_job_fields.js';
import {BlockStrategy, GlueType, MisfireStrategy, RoutingStrategy} from './enums.js';

// A <select> of every value of an enum (enums.js), current (or the default) chosen.
function select(name, apiEnum, current) {
  const s = h('select', {name, id: 'f-' + name}, apiEnum.values.map((v) =>
    h('option', {value: apiEnum.name(v)}, enumLabel(apiEnum.prefix, apiEnum.name(v)))));
  s.value = apiEnum.orDefault(current);
  return s;
}

function input(name, value, attrs = {}) {
  return h('input', {name, id: 'f-' + name, value: value ?? '', ...attrs});
}

// A labelled field with its error slot (data-field names it for the error mapping).
function field(key, label, control, help) {
  return h('div', {class: 'field', dataset: {field: key}},
      h('label', {for: control.id}, label), control,
      help ? h('div', {class: 'help muted'}, help) : null,
      h('div', {class: 'field-error', dataset: {errorFor: key}}));
}

function localInput(ts) {
  if (!ts) return '';
  const d = new Date(ts);
  const off = d.getTimezoneOffset() * 60000;
  return new Date(d.getTime() - off).toISOString().slice(0, 19);
}

// The form's controls, filled from job.
function controls(job) {
  const sched = job.schedule || {};
  const kind = sched.cron ? 'cron' : sched.fixRate ? 'fix_rate' :
    sched.fixDelay ? 'fix_delay' : 'none';
  const f = {
    app: input('app', job.app, {required: true, autocomplete: 'off'}),
    name: input('name', job.name, {required: true, autocomplete: 'off'}),
    description: input('description', job.description),
    owner: input('owner', job.owner),
    alarmContacts: input('alarm_contacts', (job.alarmContacts || []).join(', ')),
    labels: input('labels', Object.entries(job.labels || {}).map(([k, v]) => `${k}=${v}`)
        .join(', '), {placeholder: 'team=payments, tier=batch', autocomplete: 'off'}),
    enabled: h('input', {type: 'checkbox', name: 'enabled', id: 'f-enabled', checked: job.enabled}),
    kind: h('select', {name: 'schedule_kind', id: 'f-schedule_kind'},
        h('option', {value: 'cron'}, t('sched.cron')),
        h('option', {value: 'fix_rate'}, t('sched.fixrate')),
        h('option', {value: 'fix_delay'}, t('sched.fixdelay')),
        h('option', {value: 'none'}, t('sched.noneopt'))),
    cron: input('cron', sched.cron ? sched.cron.expression : '0 * * * * ?',
        {class: 'mono', spellcheck: 'false', autocomplete: 'off'}),
    zone: input('time_zone', sched.cron ? (sched.cron.timeZone || 'UTC') : 'UTC',
        {list: 'zones', autocomplete: 'off'}),
    interval: input('interval', sched.fixRate ? sched.fixRate.intervalSeconds : '60',
        {type: 'number', min: 1}),
    start: input('start_time', sched.fixRate ? localInput(sched.fixRate.startTime) : '',
        {type: 'datetime-local', step: 1}),
    delay: input('delay_ms',
        sched.fixDelay ? String(Math.round(durationSeconds(sched.fixDelay.delay) * 1000)) : '1000',
        {type: 'number', min: 100}),
    delayStart: input('delay_start', sched.fixDelay ? localInput(sched.fixDelay.startTime) : '',
        {type: 'datetime-local', step: 1}),
    glue: select('glue_type', GlueType, job.glueType),
    handler: input('handler', job.handler, {autocomplete: 'off'}),
    param: h('textarea', {name: 'param', id: 'f-param', rows: 2}),
    script: h('textarea', {name: 'script_source', id: 'f-script_source', rows: 10,
      class: 'mono', spellcheck: 'false'}),
    routing: select('routing_strategy', RoutingStrategy, job.routingStrategy),
    block: select('block_strategy', BlockStrategy, job.blockStrategy),
    misfire: select('misfire_strategy', MisfireStrategy, job.misfireStrategy),
    timeout: input('timeout', String(durationSeconds(job.timeout)), {type: 'number', min: 0}),
    retries: input('fail_retry_count', String(job.failRetryCount || 0), {type: 'number', min: 0}),
    children: input('child_job_ids', (job.childJobIds || []).join(', '),
        {placeholder: '12, 15'}),
  };
  f.kind.value = kind;
  f.param.value = job.param || '';
  f.script.value = job.scriptSource || '';
  return f;
}

// The jobwheel.v1.Schedule the form's schedule fields say.
function scheduleOf(f) {
  switch (f.kind.value) {
    case 'cron': return {cron: {expression: f.cron.value.trim(), timeZone: f.zone.value.trim()}};
    case 'fix_rate': {
      const fr = {intervalSeconds: String(f.interval.value || 0)};
      if (f.start.value) fr.startTime = new Date(f.start.value).toISOString();
      return {fixRate: fr};
    }
    case 'fix_delay': {
      const fd = {delay: `${Number(f.delay.value || 0) / 1000}s`};
      if (f.delayStart.value) fd.startTime = new Date(f.delayStart.value).toISOString();
      return {fixDelay: fd};
    }
    default: return {none: {}};
  }
}

// The jobwheel.v1.Job the form says; what the form does not show is kept from job.
function jobOf(f, job) {
  return {
    app: f.app.value.trim(), name: f.name.value.trim(), description: f.description.value,
    owner: f.owner.value.trim(),
    alarmContacts: f.alarmContacts.value.split(',').map((s) => s.trim()).filter(Boolean),
    schedule: scheduleOf(f), misfireStrategy: f.misfire.value, routingStrategy: f.routing.value,
    blockStrategy: f.block.value, handler: f.handler.value.trim(), param: f.param.value,
    timeout: `${Number(f.timeout.value || 0)}s`, failRetryCount: Number(f.retries.value || 0),
    childJobIds: f.children.value.split(/[\s,]+/).filter(Boolean),
    glueType: f.glue.value,
    scriptSource: f.glue.value === GlueType.default ? '' : f.script.value,
    enabled: f.enabled.checked,
    labels: Object.fromEntries(f.labels.value.split(',').map((s) => s.trim()).filter(Boolean)
        .map((kv) => [kv.split('=')[0].trim(), kv.split('=').slice(1).join('=').trim()])),
    // Not on the form: kept as it is (an update without a mask replaces every field).
    runRetention: job.runRetention,
  };
}

export async function render(view, ctx) {
  const id = ctx.params[0];
  put(view, spinner());
  let job = {enabled: true, schedule: {cron: {expression: '0 * * * * ?', timeZone: 'UTC'}}};
  if (id) {
    try {
      job = (await jobs('GetJob', {id})).job;
    } catch (e) {
      put(view, errorBox(e));
      return;
    }
  } else if (ctx.query.get('app')) {
    job.app = ctx.query.get('app');
  }
  const f = controls(job);
  const http = httpSection(f.param, f.handler);  // Writes f.param for handler http.
  if (!canScript()) {
    for (const o of f.glue.options) if (o.value !== GlueType.default) o.disabled = true;
  }
  const preview = new CronPreview();
  const zones = h('datalist', {id: 'zones'}, zoneNames().map((z) => h('option', {value: z})));

  const cronBox = h('div', {class: 'sub'}, field('cron', t('field.cron'), f.cron, t('help.cron')),
      field('time_zone', t('field.timezone'), f.zone), zones, preview.el);
  const rateBox = h('div', {class: 'sub'},
      field('interval', t('field.interval'), f.interval),
      field('start_time', t('field.starttime'), f.start, t('help.starttime')));
  const delayBox = h('div', {class: 'sub'},
      field('delay_ms', t('field.delay'), f.delay, t('help.delay')),
      field('delay_start', t('field.starttime'), f.delayStart, t('help.starttime')));
  const version = h('span', {class: 'muted', 'data-test': 'script-version'},
      job.scriptVersion ? t('field.scriptversion', {n: job.scriptVersion}) : '');
  const scriptBox = h('div', {class: 'sub'}, field('script_source', t('field.script'), f.script),
      version);
  const refresh = () => {
    cronBox.hidden = f.kind.value !== 'cron';
    rateBox.hidden = f.kind.value !== 'fix_rate';
    delayBox.hidden = f.kind.value !== 'fix_delay';
    scriptBox.hidden = f.glue.value === GlueType.default;
    http.refresh();
    if (f.kind.value === 'none') preview.update(null);
    else preview.update(scheduleOf(f), f.kind.value === 'cron' ? f.zone.value.trim() || 'UTC' : 'UTC');
  };
  for (const el of [f.kind, f.cron, f.zone, f.interval, f.start, f.delay, f.delayStart, f.glue]) {
    el.addEventListener('input', refresh);
  }
  f.handler.addEventListener('input', refresh);  // Shows the HTTP section for http.

  let topError = errorBox(null);
  const save = h('button', {class: 'btn primary', type: 'submit', 'data-test': 'save'},
      id ? t('form.save') : t('form.create'));
  const form = h('form', {class: 'job-form', novalidate: true, onsubmit: async (e) => {
    e.preventDefault();
    form.querySelectorAll('.field-error').forEach((x) => { x.textContent = ''; });
    form.querySelectorAll('.field.invalid').forEach((x) => x.classList.remove('invalid'));
    const out = jobOf(f, job);
    save.disabled = true;
    const box = errorBox(null);
    topError.replaceWith(box);
    topError = box;
    try {
      const r = id ? await jobs('UpdateJob', {job: {...out, id}}) :
                     await jobs('CreateJob', {job: out});
      location.hash = '#/jobs/' + r.job.id;
    } catch (ex) {
      save.disabled = false;
      const key = ex.code === 'invalid_argument' || ex.code === 'permission_denied' ?
        fieldFor(ex.message) : null;
      const slot = key && form.querySelector(`[data-error-for="${key}"]`);
      if (slot && !slot.closest('[hidden]')) {
        fieldError(slot, ex.message);
      } else {
        const b = errorBox(ex);
        topError.replaceWith(b);
        topError = b;
      }
    }
  }},
  topError,
  h('fieldset', null, h('legend', null, t('form.general')),
      field('app', t('field.app'), f.app), field('name', t('field.name'), f.name),
      field('description', t('field.description'), f.description),
      field('owner', t('field.owner'), f.owner),
      field('alarm_contacts', t('field.alarm'), f.alarmContacts, t('help.commas')),
      field('labels', t('field.labels'), f.labels, t('help.commas')),
      field('enabled', t('field.enabled'), f.enabled)),
  h('fieldset', null, h('legend', null, t('form.schedule')),
      field('schedule', t('field.schedulekind'), f.kind), cronBox, rateBox, delayBox),
  h('fieldset', null, h('legend', null, t('form.execution')),
      field('glue_type', t('field.glue'), f.glue),
      field('handler', t('field.handler'), f.handler), field('param', t('field.param'), f.param),
      http.el,
      scriptBox),
  h('fieldset', null, h('legend', null, t('form.strategies')),
      field('routing_strategy', t('field.routing'), f.routing),
      field('block_strategy', t('field.block'), f.block),
      field('misfire_strategy', t('field.misfire'), f.misfire),
      field('timeout', t('field.timeout'), f.timeout, t('help.timeout')),
      field('fail_retry_count', t('field.retries'), f.retries),
      field('child_job_ids', t('field.children'), f.children, t('help.commas'))),
  h('div', {class: 'form-buttons'},
      h('a', {class: 'btn', href: id ? `#/jobs/${id}` : '#/jobs'}, t('common.cancel')), save));
  put(view, h('div', {class: 'page-head'},
      h('h1', null, id ? t('form.edittitle', {name: job.name}) : t('form.newtitle'))),
  h('div', {class: 'card'}, form));
  refresh();
}
