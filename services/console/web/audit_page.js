// The audit trail (JobAdminService/ListAuditEvents): who changed what, when, from where.
// Admins see every event; operators and viewers the events of their apps (the server decides).
// Filters by actor, action and target; pages with the API's page tokens. Every value is text.

import {h, put} from './dom.js';
import {jobs} from './api.js';
import {t} from './i18n.js';
import {timeEl} from './time.js';
import {card, table, errorBox} from './widgets.js';

function changesEl(changes) {
  if (!changes || !changes.length) return h('span', {class: 'muted'}, '—');
  return h('ul', {class: 'audit-changes'}, changes.map((c) =>
    h('li', null, h('code', null, c.field), ': ',
        h('span', {class: 'muted'}, c.before || '∅'), ' → ', c.after || '∅')));
}

export function render(view) {
  const actor = h('input', {name: 'actor', placeholder: t('audit.actor'), 'data-test': 'audit-actor'});
  const action = h('input', {name: 'action', placeholder: 'UpdateJob', 'data-test': 'audit-action'});
  const target = h('input', {name: 'target', placeholder: 'job 42', 'data-test': 'audit-target'});
  const body = h('div');
  const more = h('button', {class: 'btn small', hidden: true, 'data-test': 'audit-more'},
      t('audit.more'));
  let token = '';
  let rows = [];
  async function load(append) {
    try {
      const r = await jobs('ListAuditEvents', {actor: actor.value.trim(),
        action: action.value.trim(), target: target.value.trim(), pageSize: 50,
        pageToken: append ? token : ''});
      rows = append ? rows.concat(r.events || []) : (r.events || []);
      token = r.nextPageToken || '';
      more.hidden = !token;
      put(body, table([
        {title: t('audit.time'), cell: (x) => timeEl(x.time)},
        {title: t('audit.actor'), cell: (x) => `${x.actorName || ''} (#${x.actorTokenId || 0})`},
        {title: t('audit.action'), cell: (x) => x.action || ''},
        {title: t('audit.target'), cell: (x) => x.target || ''},
        {title: t('audit.apps'), cell: (x) => (x.apps || []).join(', ')},
        {title: t('audit.changes'), cell: (x) => changesEl(x.changes)},
        {title: t('audit.from'), cell: (x) => h('span', {class: 'small', title: x.requestId || ''},
            x.peer || '')},
      ], rows, {rowAttrs: (x) => ({'data-audit': String(x.id || 0)})}));
    } catch (e) {
      put(body, errorBox(e));
    }
  }
  more.addEventListener('click', () => load(true));
  const form = h('form', {class: 'filters', onsubmit: (e) => {
    e.preventDefault();
    load(false);
  }}, actor, action, target, h('button', {class: 'btn small', type: 'submit'}, t('audit.filter')));
  put(view, h('div', {class: 'page-head'}, h('h1', null, t('nav.audit'))),
      card(null, form, body, more));
  load(false);
}
