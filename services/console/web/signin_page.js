// Sign in by pasting an API token. It is kept in this tab's sessionStorage only.

import {h, put} from './dom.js';
import {call} from './api.js';
import {t} from './i18n.js';
import {setToken, setIdentity, signOut} from './session.js';
import {errorBox} from './widgets.js';

async function signInWith(token) {
  setToken(token);
  try {
    const resp = await call('TokenAdminService', 'GetCurrentToken', {});
    setIdentity(resp.token || {});
  } catch (e) {
    signOut();
    throw e;
  }
}

export function render(view, {onSignedIn, notice}) {
  let err = errorBox(notice);
  const input = h('input', {type: 'password', id: 'token', name: 'token', autocomplete: 'off',
    spellcheck: 'false', placeholder: t('signin.placeholder'), required: true});
  const button = h('button', {class: 'btn primary', type: 'submit', 'data-test': 'signin'},
      t('signin.button'));
  const form = h('form', {class: 'signin card', onsubmit: async (e) => {
    e.preventDefault();
    button.disabled = true;
    try {
      await signInWith(input.value.trim());
      onSignedIn();
    } catch (ex) {
      const box = errorBox(ex);
      err.replaceWith(box);
      err = box;
      button.disabled = false;
    }
  }},
  h('h1', null, t('signin.title')),
  h('p', {class: 'muted'}, t('signin.help')),
  h('label', {for: 'token'}, t('signin.token')), input, err, button,
  h('p', {class: 'muted small'}, t('signin.storage')));
  put(view, form);
  input.focus();
}
