// API tokens (admin only): create (the secret is shown once), list, revoke.

import {h, put} from './dom.js';
import {tokens} from './api.js';
import {t, enumLabel} from './i18n.js';
import {isAdmin} from './session.js';
import {timeEl} from './time.js';
import {card, table, errorBox} from './widgets.js';
import {modal, confirmDialog} from './dialog.js';
import {Role} from './enums.js';

function createDialog(onCreated) {
  const name = h('input', {name: 'name', required: true, autocomplete: 'off', 'data-test': 'token-name'});
  const role = h('select', {name: 'role', 'data-test': 'token-role'},
      Role.values.map((r) => h('option', {value: Role.name(r)}, enumLabel(Role.prefix, Role.name(r)))));
  const appsIn = h('input', {name: 'apps', placeholder: 'demo, billing', 'data-test': 'token-apps'});
  const expire = h('input', {name: 'expire', type: 'datetime-local', step: 1});
  let created = null;
  return modal({
    title: t('tok.create'),
    body: h('div', {class: 'form-grid'},
        h('label', null, t('tok.name')), name, h('label', null, t('tok.role')), role,
        h('label', null, t('tok.apps')), appsIn, h('label', null, t('tok.expire')), expire,
        h('p', {class: 'muted small span2'}, t('tok.appshelp'))),
    okText: t('tok.create'),
    onOk: async () => {
      const req = {name: name.value.trim(), role: role.value,
        apps: appsIn.value.split(',').map((s) => s.trim()).filter(Boolean)};
      if (expire.value) req.expireTime = new Date(expire.value).toISOString();
      created = await tokens('CreateToken', req);
    },
  }).then((ok) => (ok && created ? showSecret(created).then(onCreated) : null));
}

// The secret, once, with a copy button and a warning.
function showSecret(resp) {
  const secret = h('input', {readonly: true, class: 'mono secret', value: resp.secret,
    'data-test': 'token-secret'});
  const copied = h('span', {class: 'muted small'});
  const copy = h('button', {class: 'btn small', type: 'button', 'data-test': 'copy',
    onclick: async () => {
      secret.select();
      try {
        await navigator.clipboard.writeText(resp.secret);
        copied.textContent = t('tok.copied');
      } catch {
        copied.textContent = document.execCommand('copy') ? t('tok.copied') : t('tok.copyfail');
      }
    }}, t('tok.copy'));
  return modal({
    title: t('tok.created', {name: resp.token ? resp.token.name : ''}),
    body: h('div', null, h('p', {class: 'warn'}, t('tok.once')), h('div', {class: 'row'}, secret, copy),
        copied),
    okText: t('tok.stored'),
    cancellable: false,
  });
}

export function render(view, ctx) {
  if (!isAdmin()) {
    put(view, errorBox({code: 'permission_denied', message: t('tok.adminonly')}));
    return;
  }
  const revoked = h('input', {type: 'checkbox', 'data-test': 'include-revoked'});
  const body = h('div');
  async function load() {
    try {
      const r = await tokens('ListTokens', {includeRevoked: revoked.checked});
      put(body, table([
        {title: t('col.id'), cls: 'num', cell: (x) => String(x.id || 0)},
        {title: t('tok.name'), cell: (x) => x.name},
        {title: t('tok.role'), cell: (x) => enumLabel(Role.prefix, x.role)},
        // An empty list reaches every app for an admin and none for anyone else.
        {title: t('tok.apps'), cell: (x) => (x.apps || []).join(', ') || h('span', {class: 'muted'},
            t(x.role === Role.name('ADMIN') ? 'tok.allapps' : 'tok.noapps'))},
        {title: t('tok.createtime'), cell: (x) => timeEl(x.createTime)},
        {title: t('tok.expire'), cell: (x) => timeEl(x.expireTime)},
        {title: t('tok.lastused'), cell: (x) => timeEl(x.lastUsedTime)},
        {title: t('tok.revoked'), cell: (x) => timeEl(x.revokeTime)},
        {title: '', cls: 'right', cell: (x) => (x.revokeTime ? '' :
          h('button', {class: 'btn small danger', 'data-test': 'revoke', onclick: () =>
            confirmDialog(t('tok.revoke.title', {name: x.name}), t('tok.revoke.confirm'),
                t('tok.revoke'), () => tokens('RevokeToken', {id: x.id})).then((ok) => ok && load()),
          }, t('tok.revoke')))},
      ], r.tokens || [], {rowAttrs: (x) => ({'data-token': x.name})}));
    } catch (e) {
      put(body, errorBox(e));
    }
  }
  revoked.addEventListener('change', load);
  put(view,
      h('div', {class: 'page-head'}, h('h1', null, t('nav.tokens')),
          h('button', {class: 'btn primary', 'data-test': 'new-token',
            onclick: () => createDialog(load)}, t('tok.create'))),
      card(null, h('div', {class: 'filters'}, h('label', null, revoked, ' ', t('tok.showrevoked'))),
          body));
  load();
}
