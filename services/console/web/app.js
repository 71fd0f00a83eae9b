// The console's shell: sign-in gate, top bar, and a router on location.hash (#/jobs/12).
// Each page module exports render(view, ctx); ctx tracks its timers so leaving a page stops
// them. A token never goes in a URL.

import {h, put, link} from './dom.js';
import {call, onUnauthenticated} from './api.js';
import {t, getLang, setLang, onLangChange, LANGUAGES, enumLabel} from './i18n.js';
import {getToken, signOut, setIdentity, getIdentity, isAdmin} from './session.js';
import {errorBox} from './widgets.js';
import * as signin from './signin_page.js';
import * as dashboard from './dashboard_page.js';
import * as jobsPage from './jobs_page.js';
import * as jobForm from './job_form.js';
import * as jobDetail from './job_detail_page.js';
import * as runsPage from './runs_page.js';
import * as runDetail from './run_detail_page.js';
import * as executors from './executors_page.js';
import * as tokensPage from './tokens_page.js';
import * as auditPage from './audit_page.js';
import {Role} from './enums.js';

const ROUTES = [
  [/^\/?$/, dashboard, 'dashboard'],
  [/^\/jobs$/, jobsPage, 'jobs'],
  [/^\/jobs\/new$/, jobForm, 'jobs'],
  [/^\/jobs\/(\d+)\/edit$/, jobForm, 'jobs'],
  [/^\/jobs\/(\d+)$/, jobDetail, 'jobs'],
  [/^\/runs$/, runsPage, 'runs'],
  [/^\/runs\/(\d+)$/, runDetail, 'runs'],
  [/^\/executors$/, executors, 'executors'],
  [/^\/tokens$/, tokensPage, 'tokens'],
  [/^\/audit$/, auditPage, 'audit'],
];

const root = document.getElementById('app');
let current = null;  // The page context of the page on screen.

// What a page gets: route params and timers that stop when the page is left.
class PageContext {
  constructor(params) {
    this.params = params;
    this.alive = true;
    this.cleanups = [];
  }
  // Runs fn now and then every ms after each run ends (never overlapping), while alive.
  poll(fn, ms) {
    let timer = 0;
    const loop = async () => {
      if (!this.alive) return;
      try {
        await fn();
      } finally {
        if (this.alive) timer = setTimeout(loop, ms);
      }
    };
    this.cleanups.push(() => clearTimeout(timer));
    loop();
  }
  onCleanup(fn) {
    this.cleanups.push(fn);
  }
  close() {
    this.alive = false;
    this.cleanups.forEach((fn) => fn());
  }
}

function topBar(section) {
  const me = getIdentity();
  const nav = [
    ['/', 'nav.dashboard', 'dashboard'], ['/jobs', 'nav.jobs', 'jobs'],
    ['/runs', 'nav.runs', 'runs'], ['/executors', 'nav.executors', 'executors'],
  ];
  nav.push(['/audit', 'nav.audit', 'audit']);
  if (isAdmin()) nav.push(['/tokens', 'nav.tokens', 'tokens']);
  const langSel = h('select', {class: 'lang', 'aria-label': t('nav.language'), 'data-test': 'lang',
    onchange: (e) => setLang(e.target.value)},
  LANGUAGES.map(([code, name]) => h('option', {value: code, selected: code === getLang()}, name)));
  return h('header', {class: 'topbar'},
      h('a', {class: 'brand', href: '#/'}, h('span', {class: 'logo'}), 'jobwheel'),
      h('nav', null, nav.map(([r, k, s]) => {
        const a = link(r, t(k));
        if (s === section) a.setAttribute('class', 'active');
        return a;
      })),
      h('div', {class: 'spacer'}),
      me ? h('span', {class: 'who', 'data-test': 'who'}, h('span', null, me.name || '—'),
          h('span', {class: 'role'}, enumLabel(Role.prefix, me.role))) : null,
      langSel,
      me ? h('button', {class: 'btn small', 'data-test': 'signout', onclick: () => {
        signOut();
        history.replaceState(null, '', '#/');
        render();
      }}, t('nav.signout')) : null);
}

function route() {
  const [raw, q] = location.hash.replace(/^#/, '').split('?');
  const path = decodeURIComponent(raw || '/');
  const query = new URLSearchParams(q || '');
  for (const [re, mod, section] of ROUTES) {
    const m = re.exec(path);
    if (m) return {mod, section, params: m.slice(1), path, query};
  }
  return null;
}

// notice: an ApiError to show on the sign-in page (why the session ended or could not start).
async function render(notice = null) {
  if (current) current.close();
  current = null;
  if (!getToken() || !getIdentity()) {
    put(root, topBar(''), h('main', {id: 'view'}));
    signin.render(root.querySelector('#view'), {onSignedIn: () => render(), notice});
    return;
  }
  const r = route();
  const view = h('main', {id: 'view'});
  put(root, topBar(r ? r.section : ''), view);
  if (!r) {
    put(view, h('div', {class: 'card'}, t('common.notfound')));
    return;
  }
  document.title = `${t('nav.' + (r.section || 'dashboard'))} · jobwheel`;
  current = new PageContext(r.params);
  current.path = r.path;
  current.query = r.query;
  try {
    await r.mod.render(view, current);
  } catch (e) {
    view.append(errorBox(e));
  }
}

// With a token left in this tab's sessionStorage, learn who it is before the first page.
async function start() {
  let notice = null;
  if (getToken()) {
    try {
      const resp = await call('TokenAdminService', 'GetCurrentToken', {});
      setIdentity(resp.token || {});
    } catch (e) {
      notice = e;
      if (e.code === 'unauthenticated' || e.code === 'permission_denied') signOut();
    }
  }
  render(notice);
}

// A token that stops working (expired, revoked) ends the session.
onUnauthenticated((err) => {
  if (!getIdentity()) return;
  signOut();
  render(err);
});
onLangChange(() => render());
window.addEventListener('hashchange', () => render());
start();

