// The Connect protocol client (unary, JSON): POST /jobwheel.v1.<Service>/<Method>.
// Errors become ApiError with the Connect code ("invalid_argument") and the server's message.

import {getToken} from './session.js';

export class ApiError extends Error {
  constructor(code, message, httpStatus) {
    super(message);
    this.code = code;
    this.httpStatus = httpStatus;
  }
}

const STATUS_CODES = {
  400: 'invalid_argument', 401: 'unauthenticated', 403: 'permission_denied', 404: 'not_found',
  408: 'deadline_exceeded', 409: 'already_exists', 412: 'failed_precondition',
  429: 'resource_exhausted', 501: 'unimplemented', 503: 'unavailable', 504: 'deadline_exceeded',
};

// Listeners told about every unauthenticated answer (the token expired or was revoked).
const unauthenticatedListeners = new Set();
export function onUnauthenticated(fn) {
  unauthenticatedListeners.add(fn);
}

// call('JobAdminService', 'ListJobs', {app: 'demo'}) → the response message as plain JSON.
export async function call(service, method, body = {}, {token} = {}) {
  const headers = {'Content-Type': 'application/json', 'Connect-Protocol-Version': '1'};
  const t = token ?? getToken();
  if (t) headers['Authorization'] = 'Bearer ' + t;
  let resp;
  try {
    resp = await fetch(`/jobwheel.v1.${service}/${method}`, {
      method: 'POST', headers, body: JSON.stringify(body), cache: 'no-store',
      credentials: 'omit',
    });
  } catch (e) {
    throw new ApiError('unavailable', 'console unreachable: ' + e.message, 0);
  }
  const text = await resp.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : {};
  } catch {
    data = null;
  }
  if (!resp.ok) {
    const code = (data && data.code) || STATUS_CODES[resp.status] || 'unknown';
    const message = data ? data.message || '' : text || `HTTP ${resp.status}`;
    const err = new ApiError(code, message, resp.status);
    if (code === 'unauthenticated') unauthenticatedListeners.forEach((fn) => fn(err));
    throw err;
  }
  if (data === null) throw new ApiError('internal', 'bad JSON from the console', resp.status);
  return data;
}

// Shorthands per service.
export const jobs = (m, b) => call('JobAdminService', m, b);
export const tokens = (m, b) => call('TokenAdminService', m, b);
export const apps = (m, b) => call('AppAdminService', m, b);
export const registry = (m, b) => call('RegistryService', m, b);
export const leadership = (m, b) => call('LeadershipService', m, b);
