// Times: shown in the browser's zone; the UTC time is in the element's title (hover).

import {h} from './dom.js';
import {t} from './i18n.js';

const pad = (n, w = 2) => String(n).padStart(w, '0');

// Parses a proto3 JSON Timestamp (RFC 3339); null when unset.
export function parseTs(ts) {
  if (!ts) return null;
  const d = new Date(ts);
  // Some servers write an unset time as the Unix epoch: that is "not yet" too.
  return isNaN(d.getTime()) || d.getTime() <= 0 ? null : d;
}

export function formatLocal(d, withMs = false) {
  const s = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
      `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  return withMs ? `${s}.${pad(d.getMilliseconds(), 3)}` : s;
}

export function formatUtc(d) {
  return d.toISOString().replace('T', ' ').replace('Z', ' UTC');
}

// <time> with the local time as text and the UTC time on hover; '—' when unset.
export function timeEl(ts, {withMs = false} = {}) {
  const d = parseTs(ts);
  if (!d) return h('span', {class: 'muted'}, '—');
  return h('time', {datetime: d.toISOString(), title: formatUtc(d)}, formatLocal(d, withMs));
}

// "3 s ago", "in 2 min".
export function relative(ts, now = Date.now()) {
  const d = parseTs(ts);
  if (!d) return '—';
  const s = Math.round((d.getTime() - now) / 1000);
  const a = Math.abs(s);
  const v = a < 60 ? t('time.s', {n: a}) : a < 3600 ? t('time.min', {n: Math.round(a / 60)}) :
      a < 86400 ? t('time.h', {n: Math.round(a / 3600)}) : t('time.d', {n: Math.round(a / 86400)});
  return s <= 0 ? t('time.ago', {v}) : t('time.in', {v});
}

// <time> showing how long ago, with local and UTC time on hover.
export function agoEl(ts) {
  const d = parseTs(ts);
  if (!d) return h('span', {class: 'muted'}, '—');
  return h('time', {datetime: d.toISOString(), title: `${formatLocal(d)} · ${formatUtc(d)}`},
      relative(ts));
}

// Milliseconds between two timestamps, or null.
export function between(a, b) {
  const x = parseTs(a), y = parseTs(b);
  return x && y ? y.getTime() - x.getTime() : null;
}

// 1234 → "1.23 s"; 45 → "45 ms".
export function formatMs(ms) {
  if (ms === null || ms === undefined) return '—';
  if (Math.abs(ms) < 10) return `${ms.toFixed(ms === 0 ? 0 : 1)} ms`;
  if (Math.abs(ms) < 1000) return `${Math.round(ms)} ms`;
  if (Math.abs(ms) < 60000) return `${(ms / 1000).toFixed(2)} s`;
  return `${(ms / 60000).toFixed(1)} min`;
}

// proto3 JSON Duration "60s" / "1.5s" → seconds (number), 0 when unset.
export function durationSeconds(d) {
  if (!d) return 0;
  const m = /^(-?\d+(?:\.\d+)?)s$/.exec(d);
  return m ? Number(m[1]) : 0;
}

// The browser's IANA zone ("Asia/Shanghai").
export function browserZone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  } catch {
    return 'UTC';
  }
}

// A time in an IANA zone, for cron previews ("2026-11-27 02:30:00 Asia/Shanghai").
export function formatInZone(d, zone) {
  try {
    const f = new Intl.DateTimeFormat('en-CA', {
      timeZone: zone || 'UTC', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23',
    });
    const p = Object.fromEntries(f.formatToParts(d).map((x) => [x.type, x.value]));
    return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}`;
  } catch {
    return formatUtc(d);
  }
}
