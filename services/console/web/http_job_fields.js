// The job form's "HTTP call" section, for jobs of the HTTP executor (handler "http",
// docs/http-jobs.md): method, URL, headers, body, expected statuses, timeout and redirects,
// written into the job's param as the executor's JSON spec whenever one of them changes. A
// param that already is a spec fills the fields; what the section does not show (secret
// headers) is kept as it is. Shown while the handler is "http". Every value goes through DOM
// properties (value, textContent), never markup.

import {h} from './dom.js';
import {t} from './i18n.js';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

// A translation when the tables have one, else the English text here.
function label(key, english) {
  const s = t(key);
  return s === key ? english : s;
}

function parseSpec(param) {
  try {
    const v = JSON.parse(param || '');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

function headerLines(headers) {
  return Object.entries(headers || {}).map(([k, v]) => `${k}: ${v}`).join('\n');
}

function headerObject(text) {
  const out = {};
  for (const line of text.split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return out;
}

// `param` and `handler` are the form's controls. Returns {el, refresh}.
export function httpSection(param, handler) {
  const spec = parseSpec(param.value) || {};
  const c = {
    method: h('select', {name: 'http_method', id: 'f-http_method', 'data-test': 'http-method'},
        METHODS.map((m) => h('option', {value: m}, m))),
    url: h('input', {name: 'http_url', id: 'f-http_url', 'data-test': 'http-url',
      autocomplete: 'off', spellcheck: 'false'}),
    headers: h('textarea', {name: 'http_headers', id: 'f-http_headers', rows: 2, class: 'mono',
      'data-test': 'http-headers', placeholder: 'Content-Type: application/json'}),
    body: h('textarea', {name: 'http_body', id: 'f-http_body', rows: 2, class: 'mono',
      'data-test': 'http-body'}),
    expected: h('input', {name: 'http_expected', id: 'f-http_expected', placeholder: '2xx',
      'data-test': 'http-expected', autocomplete: 'off'}),
    timeout: h('input', {name: 'http_timeout', id: 'f-http_timeout', type: 'number', min: 1,
      placeholder: '30', 'data-test': 'http-timeout'}),
    follow: h('input', {type: 'checkbox', name: 'http_follow', id: 'f-http_follow',
      'data-test': 'http-follow'}),
    maxRedirects: h('input', {name: 'http_max_redirects', id: 'f-http_max_redirects',
      type: 'number', min: 0, max: 10, placeholder: '5'}),
  };
  c.method.value = METHODS.includes(String(spec.method || '').toUpperCase()) ?
    String(spec.method).toUpperCase() : 'GET';
  c.url.value = typeof spec.url === 'string' ? spec.url : '';
  c.headers.value = headerLines(spec.headers);
  c.body.value = typeof spec.body === 'string' ? spec.body : '';
  c.expected.value = Array.isArray(spec.expected_status) ? spec.expected_status.join(', ') : '';
  c.timeout.value = typeof spec.timeout === 'string' ? String(parseFloat(spec.timeout) || '') : '';
  c.follow.checked = spec.follow_redirects === true;
  c.maxRedirects.value = spec.max_redirects ? String(spec.max_redirects) : '';

  // The spec from the fields, over the param's own (so secret_headers survive).
  function write() {
    const out = {...(parseSpec(param.value) || {})};
    for (const k of ['followRedirects', 'maxRedirects', 'expectedStatus']) delete out[k];
    out.method = c.method.value;
    out.url = c.url.value.trim();
    const headers = headerObject(c.headers.value);
    if (Object.keys(headers).length) out.headers = headers; else delete out.headers;
    if (c.body.value) out.body = c.body.value; else delete out.body;
    const expected = c.expected.value.split(',').map((s) => s.trim()).filter(Boolean)
        .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
    if (expected.length) out.expected_status = expected; else delete out.expected_status;
    if (c.timeout.value) out.timeout = `${Number(c.timeout.value)}s`; else delete out.timeout;
    if (c.follow.checked) out.follow_redirects = true; else delete out.follow_redirects;
    if (c.follow.checked && c.maxRedirects.value) {
      out.max_redirects = Number(c.maxRedirects.value);
    } else {
      delete out.max_redirects;
    }
    param.value = JSON.stringify(out);
  }
  for (const el of Object.values(c)) el.addEventListener('input', write);
  c.follow.addEventListener('change', write);

  const row = (key, text, control, help) => h('div', {class: 'field', dataset: {field: key}},
      h('label', {for: control.id}, text), control,
      help ? h('div', {class: 'help muted'}, help) : null);
  const el = h('div', {class: 'sub', 'data-test': 'http-section'},
      h('div', {class: 'help muted'}, label('http.intro',
          'HTTP call (the HTTP executor, handler "http"): these fields write the param. ' +
          'Secret headers come from the executor\'s files or environment: add ' +
          '"secret_headers" to the param (docs/http-jobs.md).')),
      row('http_method', label('http.method', 'Method'), c.method),
      row('http_url', label('http.url', 'URL'), c.url,
          label('http.urlhelp', 'An absolute http or https URL.')),
      row('http_headers', label('http.headers', 'Headers'), c.headers,
          label('http.headershelp', 'One "Name: value" per line; never secrets.')),
      row('http_body', label('http.body', 'Body'), c.body),
      row('http_expected', label('http.expected', 'Expected status'), c.expected,
          label('http.expectedhelp', 'Comma list: 200, 2xx, 200-299 (default 2xx).')),
      row('http_timeout', label('http.timeout', 'Call timeout (s)'), c.timeout,
          label('http.timeouthelp', 'Bounds the call, redirects included (default 30).')),
      row('http_follow', label('http.follow', 'Follow redirects'), c.follow),
      row('http_max_redirects', label('http.maxredirects', 'Max redirects'), c.maxRedirects));
  const refresh = () => {
    el.hidden = handler.value.trim() !== 'http';
  };
  return {el, refresh};
}
