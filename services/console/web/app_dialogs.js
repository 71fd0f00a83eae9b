// App (executor group) administration for admins: create, edit, delete (AppAdminService).

import {h} from './dom.js';
import {apps} from './api.js';
import {t} from './i18n.js';
import {modal, confirmDialog} from './dialog.js';
import {AddressType} from './enums.js';

// Create (app undefined) or edit an app; onDone() after a change.
export function appDialog(app, onDone) {
  const editing = Boolean(app);
  const a = app || {};
  const name = h('input', {name: 'name', value: a.name || '', required: true, autocomplete: 'off',
    disabled: editing, 'data-test': 'app-name'});
  const title = h('input', {name: 'title', value: a.title || '', 'data-test': 'app-title'});
  const type = h('select', {name: 'address_type', 'data-test': 'app-type'},
      h('option', {value: AddressType.name('AUTO')}, t('app.auto')),
      h('option', {value: AddressType.name('MANUAL')}, t('app.manual')));
  type.value = a.addressType === AddressType.name('MANUAL') ? a.addressType : AddressType.default;
  const addrs = h('textarea', {name: 'manual_addresses', rows: 3, placeholder: '10.0.0.5:7200',
    'data-test': 'app-addresses'});
  addrs.value = (a.manualAddresses || []).join('\n');
  return modal({
    title: editing ? t('app.edit', {name: a.name}) : t('app.new'),
    body: h('div', {class: 'form-grid'},
        h('label', null, t('app.name')), name, h('label', null, t('app.title')), title,
        h('label', null, t('app.addresstype')), type,
        h('label', null, t('app.addresses')), addrs,
        h('p', {class: 'muted small span2'}, t('app.help'))),
    okText: editing ? t('form.save') : t('app.create'),
    onOk: () => {
      const body = {app: {name: name.value.trim(), title: title.value.trim(),
        addressType: type.value,
        manualAddresses: addrs.value.split(/[\s,]+/).filter(Boolean)}};
      return editing ? apps('UpdateApp', body) : apps('CreateApp', body);
    },
  }).then((ok) => { if (ok) onDone(); });
}

export function deleteAppDialog(app, onDone) {
  return confirmDialog(t('app.delete.title', {name: app.name}), t('app.delete.confirm'),
      t('job.delete'), () => apps('DeleteApp', {name: app.name}))
      .then((ok) => { if (ok) onDone(); });
}
