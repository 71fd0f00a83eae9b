// The live preview of a schedule's next fire times (JobAdminService/PreviewFireTimes), debounced.
// Times are shown in the job's zone; the browser-local and UTC times are on hover.

import {h, put, debounce} from './dom.js';
import {jobs} from './api.js';
import {t} from './i18n.js';
import {parseTs, formatInZone, formatLocal, formatUtc} from './time.js';

export function fireTimesList(times, zone) {
  if (!times.length) return h('div', {class: 'muted'}, t('preview.never'));
  return h('ol', {class: 'fire-times', 'data-test': 'preview-times'}, times.map((ts) => {
    const d = parseTs(ts);
    return h('li', null, h('time', {datetime: d.toISOString(),
      title: `${t('preview.local')} ${formatLocal(d)} · ${formatUtc(d)}`},
    formatInZone(d, zone), ' ', h('span', {class: 'muted'}, zone || 'UTC')));
  }));
}

// The times, or the rule in words when the schedule has none of its own (FIX_DELAY).
export function previewBody(r, zone) {
  if (r.summary) return h('div', {'data-test': 'preview-summary'}, r.summary);
  return fireTimesList(r.fireTimes || [], zone);
}

// A preview box; update(schedule, zone) asks again after a quiet 400 ms.
export class CronPreview {
  constructor() {
    this.el = h('div', {class: 'preview', 'data-test': 'preview'});
    this.seq = 0;
    this.update = debounce((schedule, zone) => this.fetch(schedule, zone), 400);
  }
  async fetch(schedule, zone) {
    const seq = ++this.seq;
    if (!schedule) {
      put(this.el);
      return;
    }
    try {
      const r = await jobs('PreviewFireTimes', {schedule, count: 5});
      if (seq !== this.seq) return;
      put(this.el, h('div', {class: 'preview-title muted'}, t('preview.title')),
          previewBody(r, zone));
    } catch (e) {
      if (seq !== this.seq) return;
      put(this.el, h('div', {class: 'field-error', 'data-test': 'preview-error'}, e.message));
    }
  }
}

// IANA zone names for the time-zone field's suggestions.
export function zoneNames() {
  try {
    return Intl.supportedValuesOf('timeZone');
  } catch {
    return ['UTC', 'Asia/Shanghai', 'Europe/London', 'America/New_York'];
  }
}
