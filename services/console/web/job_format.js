// How jobs are summarised in tables and detail pages.

import {h} from './dom.js';
import {t} from './i18n.js';
import {durationSeconds} from './time.js';

// "cron 0 30 2 ? * MON-FRI (Asia/Shanghai)", "every 5 s", "none".
export function scheduleText(schedule) {
  const s = schedule || {};
  if (s.cron) return `cron ${s.cron.expression || ''}` + (s.cron.timeZone ? ` (${s.cron.timeZone})` : ' (UTC)');
  if (s.fixRate) return t('sched.every', {n: Number(s.fixRate.intervalSeconds || 0)});
  if (s.fixDelay) {
    return t('sched.afterend', {ms: Math.round(durationSeconds(s.fixDelay.delay) * 1000)});
  }
  return t('sched.none');
}

export function scheduleEl(schedule) {
  return h('code', {class: 'sched'}, scheduleText(schedule));
}
