// Job names for run lists (a run carries only its job id): a link that shows "#12" at once and
// the job's name when GetJob answers. Names are cached per token for the page's life.

import {h} from './dom.js';
import {jobs} from './api.js';
import {getToken} from './session.js';

const cache = new Map();  // "<token>/<id>" → Promise<string|null>

function nameOf(id) {
  const key = `${getToken()}/${id}`;
  if (!cache.has(key)) {
    cache.set(key, jobs('GetJob', {id}).then((r) => (r.job && r.job.name) || null,
        () => null));
  }
  return cache.get(key);
}

export function jobLink(id) {
  const a = h('a', {href: `#/jobs/${id}`, title: `#${id}`}, `#${id}`);
  nameOf(id).then((name) => {
    if (name) a.textContent = name;
  });
  return a;
}
