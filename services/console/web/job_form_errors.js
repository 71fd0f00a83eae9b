// Maps an API message naming a field ("job.schedule.cron: time_zone: unknown time zone 'X'")
// to the form field that shows it (data-field keys of job_form.js).

const FIELDS = new Set(['app', 'name', 'description', 'owner', 'alarm_contacts', 'enabled', 'labels',
  'schedule', 'schedule.cron', 'schedule.cron.expression', 'schedule.cron.time_zone',
  'schedule.fix_rate', 'schedule.fix_rate.interval_seconds', 'schedule.fix_rate.start_time',
  'schedule.fix_delay', 'schedule.fix_delay.delay', 'schedule.fix_delay.start_time',
  'glue_type', 'handler', 'param', 'script_source', 'routing_strategy', 'block_strategy',
  'misfire_strategy', 'timeout', 'fail_retry_count', 'child_job_ids']);

// Field paths to the data-field of the form control.
const ALIASES = {
  'schedule.cron': 'cron', 'schedule.cron.expression': 'cron',
  'schedule.cron.time_zone': 'time_zone', 'schedule.fix_rate': 'interval',
  'schedule.fix_rate.interval_seconds': 'interval', 'schedule.fix_rate.start_time': 'start_time',
  'schedule.fix_delay': 'delay_ms', 'schedule.fix_delay.delay': 'delay_ms',
  'schedule.fix_delay.start_time': 'delay_start',
};

// The data-field key for the message, or null when it names no field of the form.
export function fieldFor(message) {
  let rest = String(message || '');
  if (!rest.startsWith('job.')) return null;
  rest = rest.slice(4);
  let path = null;
  // "schedule.cron: time_zone: ..." → schedule.cron.time_zone while the longer path is a field.
  for (;;) {
    const m = /^([a-z_.]+)(\[\d+\])?: /.exec(rest);
    if (!m) break;
    const next = path ? `${path}.${m[1]}` : m[1];
    if (!FIELDS.has(next)) break;
    path = next;
    rest = rest.slice(m[0].length);
  }
  if (!path) return null;
  return ALIASES[path] || path;
}

export function fieldError(slot, message) {
  slot.textContent = message;
  const f = slot.closest('.field');
  if (f) {
    f.classList.add('invalid');
    const c = f.querySelector('input, select, textarea');
    if (c) c.focus();
  }
}
