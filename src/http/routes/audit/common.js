/* global document, fetch, localStorage, sessionStorage, setTimeout, URL, Blob */
// What the auditors' page's parts share: the page's state, building and saying in the
// document, the API with the key of this tab, the pinned keys, downloads, and signing out.
import { fromBase64 } from './verify.js';

export const KEY = 'petstore-audit.key';
const PINS = 'petstore-audit.keys';
export const KEPT = 'petstore-audit.checkpoint';

export const $ = (id) => document.getElementById(id);
export const state = { verifiers: [], listed: [], newest: undefined, rows: [], pet: undefined };

export function element(name, attributes = {}, ...children) {
  const e = document.createElement(name);
  for (const [key, value] of Object.entries(attributes)) e.setAttribute(key, value);
  e.append(...children);
  return e;
}

export function say(id, text, kind = '') {
  const target = $(id);
  target.textContent = text;
  target.className = kind;
}

export async function api(path) {
  const res = await fetch(path, { headers: { Authorization: `Bearer ${sessionStorage.getItem(KEY)}` }, cache: 'no-store' });
  if (!res.ok) {
    const error = await res.json().catch(() => ({ code: 'error', message: res.statusText }));
    throw Object.assign(new Error(`${res.status} ${error.code}: ${error.message}`), { status: res.status });
  }
  return res;
}

export const readPins = () => (localStorage.getItem(PINS) ?? '').split('\n').filter((line) => line.trim() !== '');
export const writePins = (pins) => localStorage.setItem(PINS, [...new Set(pins)].map((k) => `${k}\n`).join(''));
export const fetchProof = async (from, to) =>
  (await (await api(`/v1/log/proof/consistency?from=${from}&to=${to}`)).json()).hashes.map(fromBase64);

export function download(text, name, type = 'application/octet-stream') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = element('a', { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export async function guarded(id, work) {
  try {
    await work();
  } catch (error) {
    say(id, error.message, 'error');
    if (error.status === 401) signOut();
  }
}

export function signedIn(yes) {
  $('signin-form').hidden = yes;
  $('signed-in').hidden = !yes;
  for (const id of ['log-state', 'receipts', 'history']) $(id).hidden = !yes;
}

export function signOut() {
  sessionStorage.removeItem(KEY);
  signedIn(false);
}
