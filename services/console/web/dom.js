// DOM helpers. Data only ever reaches the page through textContent and attributes:
// nothing here parses HTML.

const SVG_NS = 'http://www.w3.org/2000/svg';

function apply(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'class') {
      el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    } else if (k === 'text') {
      el.textContent = String(v);
    } else if (k === 'value' && 'value' in el) {
      el.value = v;
    } else if (k === 'checked' || k === 'disabled' || k === 'selected') {
      el[k] = Boolean(v);
    } else if (k === 'dataset') {
      Object.assign(el.dataset, v);
    } else {
      el.setAttribute(k, v === true ? '' : String(v));
    }
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// h('div', {class: 'x', onclick: fn}, child, 'text', [more]) → HTMLElement.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  apply(el, attrs);
  append(el, children);
  return el;
}

// The same for SVG elements (createElementNS).
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// Replaces el's children.
export function put(el, ...children) {
  clear(el);
  append(el, children);
  return el;
}

// A link to a route inside the console (#/...).
export function link(route, ...children) {
  return h('a', {href: '#' + route}, ...children);
}

// Calls fn at most once per `ms` of quiet.
export function debounce(fn, ms) {
  let t = 0;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

// Keeps a page's filters in the route's query (#/jobs?app=demo) without re-rendering, so a
// reload or Back shows the same list. Never put a secret here.
export function replaceQuery(params) {
  const [path] = location.hash.replace(/^#/, '').split('?');
  const q = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== '' && v !== undefined))
      .toString();
  history.replaceState(history.state, '', '#' + path + (q ? '?' + q : ''));
}
