// The web view of `kubectl ayatori ui` (docs/kubectl-ayatori.md, "ui"). Every string from the
// cluster (names, reasons, messages, logs) reaches the page through textContent, never as HTML;
// every request carries the API header the server requires (cmd/kubectl-ayatori/ui/guard.h).
import {BoundedLog, parseEvents} from './text.js';

const API_HEADER = {'X-Ayatori-UI': '1'};
const REFRESH_MS = 3000;
const LOG_LIMIT = 1 << 20;  // characters of a log the page keeps
// The derived states in statemachine::State's order (src/statemachine/statemachine.h).
const STATES = ['Resolving', 'Queued', 'Scheduling', 'Starting', 'Running', 'Cancelling',
  'ResultUnknown', 'Succeeded', 'Failed', 'Cancelled', 'Deleting'];
const COLUMNS = [['namespace', 'Namespace'], ['name', 'Name'], ['state', 'State'],
  ['class', 'Class'], ['reason', 'Reason'], ['exit', 'Exit'], ['age', 'Age']];

const $ = (id) => document.getElementById(id);

class ApiError extends Error {
  constructor(status, error) {
    super(error && error.message ? error.message : `HTTP ${status}`);
    this.status = status;
    this.reason = error && error.reason;
  }
}

async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options, headers: {...API_HEADER, ...(options.headers || {})},
    credentials: 'same-origin', cache: 'no-store'});
  let body = null;
  try {
    body = await response.json();
  } catch {
    throw new ApiError(response.status, {message: `the server answered ${response.status}`});
  }
  if (!response.ok) throw new ApiError(response.status, body && body.error);
  return body;
}

// A refusal by RBAC is not a failure of the page: it says what the user may not see.
function showMessage(element, error) {
  element.hidden = false;
  element.classList.toggle('forbidden', error.status === 403);
  element.textContent = error.status === 403 ? `You may not see this: ${error.message}`
    : error.message;
}

function hideMessage(element) {
  element.hidden = true;
  element.textContent = '';
}

function fillSelect(select, values, allLabel, chosen) {
  select.replaceChildren();
  const all = document.createElement('option');
  all.value = '';
  all.textContent = allLabel;
  select.append(all);
  for (const value of values) {
    const option = document.createElement('option');
    option.value = value;
    option.textContent = value;
    select.append(option);
  }
  select.value = values.includes(chosen) ? chosen : '';
}

const list = {jobs: [], timer: null, config: null};

function jobHref(job) {
  return `#/namespaces/${encodeURIComponent(job.namespace)}/jobs/${encodeURIComponent(job.name)}`;
}

function renderJobs() {
  const ns = $('filter-namespace').value;
  const cls = $('filter-class').value;
  const state = $('filter-state').value;
  const name = $('filter-name').value.trim();
  const shown = list.jobs.filter((j) => (!ns || j.namespace === ns) && (!cls || j.class === cls) &&
    (!state || j.state === state) && (!name || j.name.includes(name)));
  const rows = shown.map((job) => {
    const tr = document.createElement('tr');
    tr.dataset.name = job.name;
    tr.dataset.state = job.state;
    for (const [key] of COLUMNS) {
      const td = document.createElement('td');
      if (key === 'name') {
        const a = document.createElement('a');
        a.href = jobHref(job);
        a.textContent = job.name;
        td.append(a);
      } else {
        td.textContent = job[key];
      }
      if (key === 'state') td.className = `state state-${job.state}`;
      tr.append(td);
    }
    return tr;
  });
  $('jobs-body').replaceChildren(...rows);
  $('count').textContent = `${shown.length} of ${list.jobs.length} Jobs`;
}

async function loadJobs() {
  const ns = list.config.allNamespaces ? '' : $('filter-namespace').value || list.config.namespace;
  try {
    const answer = await api(`/api/jobs?namespace=${encodeURIComponent(ns)}`);
    list.jobs = answer.items;
    hideMessage($('list-message'));
    const classes = [...new Set(list.jobs.map((j) => j.class))].sort();
    fillSelect($('filter-class'), classes, 'every class', $('filter-class').value);
    $('status').textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    list.jobs = [];
    showMessage($('list-message'), error);
  }
  renderJobs();
}

async function loadNamespaces() {
  let names = [];
  try {
    names = (await api('/api/namespaces')).items;
  } catch {
    // A user who may not list namespaces still sees the namespace of the kubeconfig.
  }
  const start = list.config.namespace;
  if (start && !names.includes(start)) names.push(start);
  fillSelect($('filter-namespace'), names.sort(), 'every namespace', start);
}

function scheduleRefresh() {
  clearInterval(list.timer);
  list.timer = null;
  if ($('live').checked && location.hash.split('/')[1] !== 'namespaces') {
    list.timer = setInterval(loadJobs, REFRESH_MS);
  }
}

const detail = {abort: null, ns: '', name: '', timer: null};

async function loadDetail() {
  try {
    const job = await api(`/api/namespaces/${detail.ns}/jobs/${detail.name}`);
    hideMessage($('detail-message'));
    $('detail-state').textContent = job.row.state;
    $('detail-state').className = `state state-${job.row.state}`;
    $('detail-why').textContent = job.why;
    $('describe').textContent = job.describe;
    $('cancel').disabled = job.finished;
    if (job.eventsError) $('describe').textContent += `\nEvents: ${job.eventsError.message}\n`;
    return job;
  } catch (error) {
    showMessage($('detail-message'), error);
    return null;
  }
}

async function followLog() {
  if (detail.abort) detail.abort.abort();
  const abort = new AbortController();
  detail.abort = abort;
  const log = new BoundedLog(LOG_LIMIT);
  const pre = $('log');
  pre.textContent = '';
  hideMessage($('log-message'));
  const follow = $('follow').checked;
  const show = () => {
    const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.textContent = (log.dropped ? `[${log.dropped} earlier characters not kept]\n` : '') +
      log.text;
    if (stick) pre.scrollTop = pre.scrollHeight;
  };
  try {
    const response = await fetch(
      `/api/namespaces/${detail.ns}/jobs/${detail.name}/log?follow=${follow}`,
      {headers: API_HEADER, signal: abort.signal, cache: 'no-store'});
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      throw new ApiError(response.status, body && body.error);
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      const parsed = parseEvents(buffer + value);
      buffer = parsed.rest;
      for (const event of parsed.events) {
        if (event.type === 'log') log.append(event.data);
        if (event.type === 'error') showMessage($('log-message'), new ApiError(event.data.code, event.data));
      }
      show();
    }
    if (abort === detail.abort) loadDetail();
  } catch (error) {
    if (error.name !== 'AbortError') showMessage($('log-message'), error);
  }
}

function confirmCancel() {
  $('confirm-text').textContent = `Cancel Job ${detail.ns}/${detail.name}? The controller stops ` +
    'its execution; the Job ends Cancelled once the backend confirmed it stopped.';
  $('confirm').showModal();
}

async function cancelJob() {
  $('confirm').close();
  try {
    const answer = await api(`/api/namespaces/${detail.ns}/jobs/${detail.name}/cancel`,
      {method: 'POST'});
    $('cancel-result').textContent = answer.cancelled ? 'Cancel requested.'
      : `Already finished (${answer.state}): nothing to cancel.`;
  } catch (error) {
    $('cancel-result').textContent = error.status === 403
      ? `You may not cancel this Job: ${error.message}` : error.message;
  }
  loadDetail();
}

function route() {
  const parts = location.hash.split('/').map(decodeURIComponent);
  if (detail.abort) detail.abort.abort();
  detail.abort = null;
  clearInterval(detail.timer);
  if (parts[1] === 'namespaces' && parts[3] === 'jobs' && parts[4]) {
    detail.ns = encodeURIComponent(parts[2]);
    detail.name = encodeURIComponent(parts[4]);
    $('list-view').hidden = true;
    $('detail-view').hidden = false;
    $('detail-title').textContent = `${parts[2]}/${parts[4]}`;
    $('cancel-result').textContent = '';
    $('describe').textContent = '';
    loadDetail();
    followLog();
    detail.timer = setInterval(loadDetail, REFRESH_MS);
  } else {
    $('detail-view').hidden = true;
    $('list-view').hidden = false;
    loadJobs();
  }
  scheduleRefresh();
}

async function start() {
  const head = COLUMNS.map(([, title]) => {
    const th = document.createElement('th');
    th.textContent = title;
    return th;
  });
  $('jobs-head').replaceChildren(...head);
  fillSelect($('filter-state'), STATES, 'every state', '');
  fillSelect($('filter-class'), [], 'every class', '');
  try {
    list.config = await api('/api/config');
  } catch (error) {
    showMessage($('list-message'), error);
    return;
  }
  await loadNamespaces();
  for (const id of ['filter-class', 'filter-state', 'filter-name']) {
    $(id).addEventListener('input', renderJobs);
  }
  $('filter-namespace').addEventListener('change', () => {
    if (!list.config.allNamespaces) loadJobs(); else renderJobs();
  });
  $('filters').addEventListener('submit', (e) => e.preventDefault());
  $('live').addEventListener('change', scheduleRefresh);
  $('follow').addEventListener('change', followLog);
  $('cancel').addEventListener('click', confirmCancel);
  $('confirm-yes').addEventListener('click', cancelJob);
  $('confirm-no').addEventListener('click', () => $('confirm').close());
  window.addEventListener('hashchange', route);
  route();
}

start();
