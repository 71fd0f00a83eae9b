// Small shared components: status badges, error boxes, tables with a pager, key/value lists.

import {h, put} from './dom.js';
import {t, enumLabel} from './i18n.js';
import {RunStatus} from './enums.js';

// A run status badge; data-status carries the enum name for tests and styling.
export function runStatus(status) {
  const s = status || RunStatus.name('UNSPECIFIED');
  const short = RunStatus.short(s);
  return h('span', {class: `badge st-${short.toLowerCase()}`, dataset: {status: short}},
      enumLabel(RunStatus.prefix, s));
}

export function enabledBadge(enabled) {
  return enabled ? h('span', {class: 'badge st-succeeded'}, t('job.enabled')) :
                   h('span', {class: 'badge st-paused'}, t('job.paused'));
}

// The API's message as it came, with its code.
export function errorBox(err) {
  if (!err) return h('div', {class: 'error hidden', role: 'alert'});
  return h('div', {class: 'error', role: 'alert'},
      h('span', {class: 'error-code'}, err.code || 'error'), ' ', h('span', {class: 'error-msg'},
          err instanceof Error || 'message' in err ? err.message : String(err)));
}

// Puts err into a slot (an element made by errorBox(null)); null hides it.
export function showError(slot, err) {
  const box = errorBox(err);
  slot.replaceWith(box);
  return box;
}

// A <table> from column specs [{title, cell: (row) => node|string, cls}].
export function table(columns, rows, {empty, rowAttrs} = {}) {
  const head = h('thead', null, h('tr', null, columns.map((c) =>
    h('th', {class: c.cls}, c.title))));
  const body = h('tbody', null, rows.length === 0 ?
    h('tr', null, h('td', {class: 'empty', colspan: columns.length}, empty || t('common.none'))) :
    rows.map((r) => h('tr', rowAttrs ? rowAttrs(r) : null,
        columns.map((c) => h('td', {class: c.cls}, c.cell(r))))));
  return h('table', {class: 'grid'}, head, body);
}

// Page-token paging: keeps the tokens of the pages seen so "previous" works.
export class Pager {
  constructor(onChange) {
    this.stack = [''];  // page tokens; the last one is the current page's.
    this.next = '';
    this.onChange = onChange;
    this.el = h('div', {class: 'pager'});
  }
  get token() {
    return this.stack[this.stack.length - 1];
  }
  reset() {
    this.stack = [''];
    this.next = '';
  }
  update(nextToken, count) {
    this.next = nextToken || '';
    const page = this.stack.length;
    put(this.el,
        h('button', {class: 'btn small', disabled: page === 1, 'data-test': 'prev',
          onclick: () => { this.stack.pop(); this.onChange(); }}, t('common.prev')),
        h('span', {class: 'muted'}, t('common.page', {n: page, count})),
        h('button', {class: 'btn small', disabled: !this.next, 'data-test': 'next',
          onclick: () => { this.stack.push(this.next); this.onChange(); }}, t('common.next')));
  }
}

// A definition list from [label, value] pairs.
export function kv(pairs) {
  return h('dl', {class: 'kv'}, pairs.filter(Boolean).map(([k, v]) =>
    [h('dt', null, k), h('dd', null, v === '' || v === undefined || v === null ?
      h('span', {class: 'muted'}, '—') : v)]));
}

export function card(title, ...children) {
  return h('section', {class: 'card'}, title ? h('h2', null, title) : null, ...children);
}

export function spinner() {
  return h('div', {class: 'loading muted'}, t('common.loading'));
}
