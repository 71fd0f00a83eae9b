// Static checks of the console's pages (no browser needed): every message key used has an
// English and a Chinese text, and no page code parses HTML, evaluates strings or sets inline
// styles from markup (the CSP would block some of it; the rest must never be written).

import fs from 'node:fs';
import path from 'node:path';
import {fileURLToPath} from 'node:url';

const WEB = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../../services/console/web');
// Loaded as ES modules whatever Node's default for a .js file outside a "type": "module"
// package (Debian's Node 18 reads them as CommonJS); the message tables import nothing.
const loadModule = (f) => import('data:text/javascript;charset=utf-8,' +
    encodeURIComponent(fs.readFileSync(path.join(WEB, f), 'utf8')));
const {en} = await loadModule('i18n_en.js');
const {zhCN} = await loadModule('i18n_zh.js');
const files = fs.readdirSync(WEB).filter((f) => /\.(js|html|css)$/.test(f));
const read = (f) => fs.readFileSync(path.join(WEB, f), 'utf8');

const cases = [
  ['every message key used in the pages has English and Chinese texts', () => {
    const missing = [];
    for (const f of files.filter((x) => x.endsWith('.js'))) {
      for (const m of read(f).matchAll(/\bt\('([a-z0-9]+\.[a-zA-Z0-9.]+)'\s*[,)]/g)) {
        if (!(m[1] in en)) missing.push(`${f}: ${m[1]} (en)`);
        if (!(m[1] in zhCN)) missing.push(`${f}: ${m[1]} (zh-CN)`);
      }
    }
    for (const k of Object.keys(en)) if (!(k in zhCN)) missing.push(`${k} (zh-CN)`);
    return missing;
  }],
  ['no HTML parsing, string evaluation or inline handlers in the pages', () => {
    const bad = [];
    const inCode = [/\.innerHTML\b/, /\.outerHTML\b/, /insertAdjacentHTML/, /document\.write/,
      /\beval\(/, /new Function\(/, /setTimeout\(\s*['"`]/, /setAttribute\(\s*['"](on|style)/i,
      /https?:\/\/(?!www\.w3\.org)/];
    const inHtml = [/\bon[a-z]+\s*=\s*["']/i, /\bstyle\s*=\s*["']/i, /<script(?![^>]*\bsrc=)[^>]*>/i,
      /<style\b/i, /https?:\/\//];
    for (const f of files) {
      const text = read(f);
      for (const re of f.endsWith('.html') ? inHtml : inCode) {
        if (re.test(text)) bad.push(`${f}: ${re}`);
      }
    }
    return bad;
  }],
  ['every page file stays small (< 300 lines)', () => files
      .filter((f) => read(f).split('\n').length >= 300 && !f.endsWith('.css'))
      .map((f) => `${f}: ${read(f).split('\n').length} lines`)],
];

let failed = 0;
for (const [name, check] of cases) {
  const problems = check();
  if (problems.length) {
    failed++;
    console.log(`FAIL  ${name}:\n      ${problems.join('\n      ')}`);
  } else {
    console.log(`ok    ${name}`);
  }
}
console.log(`${cases.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
