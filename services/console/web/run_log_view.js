// A run's log (GetRunLog from from_line), following live while the run is not over. Each line
// is a text node: a log line "<script>" shows as text.

import {h, put} from './dom.js';
import {jobs} from './api.js';
import {t} from './i18n.js';
import {errorBox} from './widgets.js';

const FOLLOW_MS = 1000;

export class RunLogView {
  // isOver() says whether the run has ended (its status is terminal).
  constructor(ctx, runId, isOver) {
    this.ctx = ctx;
    this.runId = runId;
    this.isOver = isOver;
    this.next = 1;
    this.ended = false;
    this.pre = h('pre', {class: 'log', 'data-test': 'run-log'});
    this.state = h('span', {class: 'muted small', 'data-test': 'log-state'});
    this.err = h('div');
    this.follow = h('input', {type: 'checkbox', checked: true, 'data-test': 'log-follow'});
    this.filter = h('input', {type: 'search', placeholder: t('log.filter'), class: 'log-filter',
      'data-test': 'log-filter'});
    this.filter.addEventListener('input', () => this.applyFilter());
    this.el = h('div', null,
        h('div', {class: 'log-head'}, this.state, this.filter, h('label', {class: 'small'},
            this.follow, ' ', t('log.scroll'))),
        this.pre, this.err);
    ctx.poll(() => this.fetch(), FOLLOW_MS);
  }

  async fetch() {
    if (this.ended) return;
    try {
      // Read every page available now, then wait for more.
      for (let pages = 0; pages < 50 && this.ctx.alive; pages++) {
        const r = await jobs('GetRunLog', {id: this.runId, fromLine: this.next});
        const lines = r.lines || [];
        this.append(lines);
        if (r.toLine) this.next = Number(r.toLine) + 1;
        else this.next += lines.length;
        if (r.end) {
          this.ended = true;
          break;
        }
        if (lines.length === 0) break;
      }
      put(this.err);
      // A run that is over but whose log is not marked ended (e.g. the executor is gone).
      if (!this.ended && this.isOver()) this.ended = true;
    } catch (e) {
      put(this.err, errorBox(e));
      if (this.isOver()) this.ended = true;
    }
    this.showState();
  }

  showState() {
    const n = this.next - 1;
    const parts = [this.ended ? t('log.ended', {n}) : t('log.following', {n})];
    if (this.filter.value) {
      const shown = this.pre.querySelectorAll('.log-line:not([hidden])').length;
      parts.push(t('log.shown', {shown, n}));
    }
    put(this.state, parts.join(' · '));
  }

  // Hides the lines that do not contain the filter text (case-insensitive).
  applyFilter(lines = this.pre.children) {
    const f = this.filter.value.toLowerCase();
    for (const el of lines) el.hidden = f !== '' && !el.textContent.toLowerCase().includes(f);
    this.showState();
  }

  append(lines) {
    if (!lines.length) return;
    const frag = document.createDocumentFragment();
    const els = lines.map((line) => h('div', {class: 'log-line'}, line));
    frag.append(...els);
    if (this.filter.value) this.applyFilter(els);
    this.pre.append(frag);
    if (this.follow.checked) this.pre.scrollTop = this.pre.scrollHeight;
  }
}
