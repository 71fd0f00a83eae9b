// Messages in English and Simplified Chinese. The choice is switchable in the page and
// remembered in localStorage; t('key', {n: 3}) fills {n}. Missing keys fall back to English.

import {en} from './i18n_en.js';
import {zhCN} from './i18n_zh.js';

const KEY = 'jobwheel.lang';
export const LANGUAGES = [['en', 'English'], ['zh-CN', '中文']];
const TABLES = {'en': en, 'zh-CN': zhCN};
const listeners = new Set();

function initial() {
  const saved = localStorage.getItem(KEY);
  if (saved && TABLES[saved]) return saved;
  return (navigator.language || '').toLowerCase().startsWith('zh') ? 'zh-CN' : 'en';
}

let lang = initial();
document.documentElement.lang = lang;

export function getLang() {
  return lang;
}

export function setLang(l) {
  if (!TABLES[l] || l === lang) return;
  lang = l;
  localStorage.setItem(KEY, l);
  document.documentElement.lang = l;
  listeners.forEach((fn) => fn(l));
}

export function onLangChange(fn) {
  listeners.add(fn);
}

export function t(key, vars) {
  let s = TABLES[lang][key] ?? en[key] ?? key;
  if (vars) s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  return s;
}

// Enum names ("RUN_STATUS_SUCCEEDED") shown short ("SUCCEEDED"); a translation when there is one.
export function enumLabel(prefix, name) {
  if (!name) return '—';
  const short = name.startsWith(prefix) ? name.slice(prefix.length) : name;
  return TABLES[lang]['enum.' + short] ?? short;
}
