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
    this.el = h('div', null,
        h('div', {class: 'log-head'}, this.state, h('label', {class: 'small'}, this.follow,
            ' ', t('log.scroll'))),
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
    put(this.state, this.ended ? t('log.ended', {n: this.next - 1}) :
        t('log.following', {n: this.next - 1}));
  }

  append(lines) {
    if (!lines.length) return;
    const frag = document.createDocumentFragment();
    for (const line of lines) frag.append(h('div', {class: 'log-line'}, line));
    this.pre.append(frag);
    if (this.follow.checked) this.pre.scrollTop = this.pre.scrollHeight;
  }
}
