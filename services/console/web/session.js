// The signed-in token and what it may do. The token lives in sessionStorage only (never in a
// URL, cookie or localStorage); the identity comes from the who-am-I RPC. The UI hides what the
// role may not do; the server enforces it anyway.

import {Role} from './enums.js';

const KEY = 'jobwheel.token';
let identity = null;  // The Token message of the signed-in caller.

export function getToken() {
  return sessionStorage.getItem(KEY) || '';
}

export function setToken(token) {
  sessionStorage.setItem(KEY, token);
}

export function signOut() {
  sessionStorage.removeItem(KEY);
  sessionStorage.clear();
  identity = null;
}

export function setIdentity(tok) {
  identity = tok;
}

export function getIdentity() {
  return identity;
}

export function role() {
  return (identity && identity.role) || Role.name('UNSPECIFIED');
}

export function isAdmin() {
  return role() === Role.name('ADMIN');
}

// The apps the token is scoped to: ["*"] means every app, an empty list none (an admin's
// token lists none and reaches every app).
export function scopedApps() {
  return (identity && identity.apps) || [];
}

// Whether the caller may change jobs and runs of `app` (no app: of any app it can see).
export function canWrite(app) {
  if (role() === Role.name('ADMIN')) return true;
  if (role() !== Role.name('OPERATOR')) return false;
  const apps = scopedApps();
  return !app || apps.includes('*') || apps.includes(app);
}

// Script jobs and tokens are the admin's.
export function canScript() {
  return isAdmin();
}
