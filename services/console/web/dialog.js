// Modal dialogs built on <dialog> (no window.alert/confirm/prompt).

import {h} from './dom.js';
import {t} from './i18n.js';
import {errorBox} from './widgets.js';

// Opens a modal with `body` and buttons; `onOk` may be async and may throw an ApiError, which
// is shown in the dialog (it stays open). Resolves true when confirmed, false when cancelled.
export function modal({title, body, okText, danger = false, onOk, cancellable = true}) {
  return new Promise((resolve) => {
    let err = errorBox(null);
    const ok = h('button', {class: danger ? 'btn danger' : 'btn primary', 'data-test': 'dialog-ok'},
        okText || t('common.ok'));
    const cancel = h('button', {class: 'btn', type: 'button', 'data-test': 'dialog-cancel',
      hidden: !cancellable}, t('common.cancel'));
    const form = h('form', {method: 'dialog'}, h('h3', null, title), body, err,
        h('div', {class: 'dialog-buttons'}, cancel, ok));
    const dlg = h('dialog', {class: 'modal'}, form);
    const close = (v) => { dlg.close(); dlg.remove(); resolve(v); };
    cancel.addEventListener('click', () => close(false));
    dlg.addEventListener('cancel', (e) => {
      e.preventDefault();
      if (cancellable) close(false);
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      ok.disabled = true;
      try {
        if (onOk) await onOk();
        close(true);
      } catch (ex) {
        const box = errorBox(ex);
        err.replaceWith(box);
        err = box;
        ok.disabled = false;
      }
    });
    document.body.append(dlg);
    dlg.showModal();
  });
}

// "Delete job 12?" with a danger button.
export function confirmDialog(title, message, okText, onOk) {
  return modal({title, body: h('p', null, message), okText, danger: true, onOk});
}
