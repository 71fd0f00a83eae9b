// Runs of every job, filtered by status and app (e.g. the failures of the night).

import {h, put} from './dom.js';
import {t} from './i18n.js';
import {runsTable} from './runs_table.js';

export function render(view, ctx) {
  const runs = runsTable(ctx, {withApp: true});
  put(view, h('div', {class: 'page-head'}, h('h1', null, t('nav.runs'))),
      h('div', {class: 'card'}, runs.el));
}
