// A stacked bar chart of runs per status per time bucket, drawn as SVG (no chart library).

import {h, svg} from './dom.js';
import {t, enumLabel} from './i18n.js';
import {parseTs, formatLocal} from './time.js';
import {RunStatus, CHART_STATUSES} from './enums.js';


const W = 1200, H = 220, LEFT = 44, BOTTOM = 22, TOP = 8;

function niceMax(v) {
  if (v <= 5) return 5;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function counts(bucket) {
  const c = {};
  for (const sc of bucket.statusCounts || []) {
    c[RunStatus.short(sc.status)] = Number(sc.count || 0);
  }
  return c;
}

// buckets: GetRunStatsResponse.buckets.
export function runsChart(buckets, {dates = false} = {}) {
  const n = Math.max(buckets.length, 1);
  const totals = buckets.map((b) => Number(b.total || 0));
  const max = niceMax(Math.max(0, ...totals));
  const plotW = W - LEFT - 4, plotH = H - BOTTOM - TOP;
  const slot = plotW / n, barW = Math.max(1, slot * 0.78);
  const y = (v) => TOP + plotH - (v / max) * plotH;
  const g = [];
  for (const f of [0, 0.5, 1]) {
    const v = max * f;
    g.push(svg('line', {x1: LEFT, x2: W - 4, y1: y(v), y2: y(v), class: 'grid-line'}));
    g.push(svg('text', {x: LEFT - 6, y: y(v) + 4, class: 'axis', 'text-anchor': 'end'},
        Number.isInteger(v) ? v : v.toFixed(1)));
  }
  const labelEvery = Math.ceil(n / 12);
  buckets.forEach((b, i) => {
    const c = counts(b);
    const x = LEFT + i * slot + (slot - barW) / 2;
    const start = parseTs(b.startTime);
    const tip = [start ? formatLocal(start) : '', `${t('dash.total')}: ${totals[i]}`]
        .concat(CHART_STATUSES.filter((s) => c[s]).map((s) => `${enumLabel('', s)}: ${c[s]}`))
        .join('\n');
    let acc = 0;
    const bar = svg('g', {class: 'bar'}, svg('title', null, tip));
    for (const s of CHART_STATUSES) {
      if (!c[s]) continue;
      const y0 = y(acc), y1 = y(acc + c[s]);
      bar.append(svg('rect', {x, y: y1, width: barW, height: Math.max(0.5, y0 - y1),
        class: `seg st-${s.toLowerCase()}`, 'data-status': s}));
      acc += c[s];
    }
    bar.append(svg('rect', {x: LEFT + i * slot, y: TOP, width: slot, height: plotH,
      class: 'hit'}));
    g.push(bar);
    if (start && i % labelEvery === 0) {
      const p2 = (v) => String(v).padStart(2, '0');
      const label = dates ? `${p2(start.getMonth() + 1)}-${p2(start.getDate())}` +
          (start.getHours() ? ` ${p2(start.getHours())}h` : '') :
        `${p2(start.getHours())}:${p2(start.getMinutes())}`;
      g.push(svg('text', {x: LEFT + i * slot + slot / 2, y: H - 6, class: 'axis',
        'text-anchor': 'middle'}, label));
    }
  });
  const chart = svg('svg', {viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img',
    'aria-label': t('dash.chart')}, ...g);
  const legend = h('div', {class: 'legend'}, CHART_STATUSES.map((s) =>
    h('span', {class: 'legend-item'}, h('span', {class: `swatch st-${s.toLowerCase()}`}),
        enumLabel('', s))));
  return h('div', {class: 'chart-wrap'}, chart, legend);
}
