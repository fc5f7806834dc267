// The web view of `kubectl ayatori ui` in a real browser: Debian's chromium driven by
// playwright-core (test/ui/package.json; hack/ui-test-deps.sh installs it, no browser download).
// Run by test/kubectl-ayatori/ui/ui_browser_e2e_test.cc, which starts the real apiserver, the
// controller with the Docker backend and the log API, creates the Jobs named below and passes:
//   AYATORI_UI_URL         the URL the plugin printed (with its token)
//   AYATORI_UI_NAMESPACE   the namespace of the Jobs
//   AYATORI_UI_JOBS        JSON {succeeded, failed, running, hostile, cancel}: Job names
//   AYATORI_UI_NODE_MODULES, AYATORI_UI_CHROMIUM, AYATORI_UI_SCREENSHOTS
// Prints one line per check and exits non-zero on the first failure.
import {createRequire} from 'node:module';
import path from 'node:path';

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};
const require = createRequire(path.join(env('AYATORI_UI_NODE_MODULES'), 'x.js'));
const {chromium} = require('playwright-core');

const url = new URL(env('AYATORI_UI_URL'));
const origin = url.origin;
const port = url.port;
const ns = env('AYATORI_UI_NAMESPACE');
const jobs = JSON.parse(env('AYATORI_UI_JOBS'));
const shots = env('AYATORI_UI_SCREENSHOTS');
const TIMEOUT = 60000;

function check(condition, what) {
  if (!condition) throw new Error(`FAILED: ${what}`);
  console.log(`ok: ${what}`);
}

// Only 127.0.0.1 is reachable; the two names of the attacks resolve to it too, so that their
// requests reach this server with their own Host and Origin.
const browser = await chromium.launch({
  executablePath: env('AYATORI_UI_CHROMIUM'),
  args: ['--host-resolver-rules=MAP rebound.test 127.0.0.1, MAP evil.test 127.0.0.1, ' +
         'MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
         '--no-proxy-server', '--disable-background-networking', '--no-first-run'],
});
const failures = [];
try {
  const context = await browser.newContext({viewport: {width: 1280, height: 800}});
  const page = await context.newPage();
  const dialogs = [];
  page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss(); });
  page.on('pageerror', (e) => failures.push(`page error: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') console.log(`console: ${m.text()}`); });
  page.setDefaultTimeout(TIMEOUT);

  // Refusals first, before the browser holds the cookie.
  let response = await page.goto(`${origin}/`);
  check(response.status() === 401, 'without the token the page is refused (401)');
  check((await page.textContent('body')).includes('not signed in'), 'and says how to sign in');
  response = await page.goto(`${origin}/?token=${'0'.repeat(64)}`);
  check(response.status() === 401, 'a wrong token is refused (401)');
  response = await page.goto(`http://rebound.test:${port}/?token=${url.searchParams.get('token')}`);
  check(response.status() === 421, 'a rebound DNS name (wrong Host) is refused (421)');

  // Sign in: the token becomes the cookie and leaves the address bar.
  response = await page.goto(url.href);
  check(response.ok(), 'the printed URL opens the page');
  check(!page.url().includes('token'), 'the token left the address bar');
  const cookies = await context.cookies(origin);
  check(cookies.length === 1 && cookies[0].httpOnly && cookies[0].sameSite === 'Strict',
    'the session cookie is HttpOnly and SameSite=Strict');
  const csp = response.headers()['content-security-policy'] || '';
  check(csp.includes("script-src 'self'") && !csp.includes('unsafe-inline'),
    'the Content-Security-Policy allows no inline script');

  // The list: every Job with the state `get` derives.
  const row = (name) => page.locator(`#jobs-body tr[data-name="${name}"]`);
  const stateOf = async (name) => (await row(name).getAttribute('data-state'));
  await page.waitForFunction((names) => names.every(
    (n) => document.querySelector(`#jobs-body tr[data-name="${n}"]`)),
  Object.values(jobs), {timeout: TIMEOUT});
  check(await stateOf(jobs.succeeded) === 'Succeeded', 'the list shows the Succeeded Job');
  check(await stateOf(jobs.failed) === 'Failed', 'the list shows the Failed Job');
  await page.waitForFunction((n) => document.querySelector(`#jobs-body tr[data-name="${n}"]`)
    ?.dataset.state === 'Running', jobs.running, {timeout: TIMEOUT});
  check(true, 'the list shows the Running Job');
  const failedCells = await row(jobs.failed).locator('td').allTextContents();
  check(failedCells.includes('ProcessFailed') && failedCells.includes('3'),
    `the Failed Job's row has its reason and exit code (${failedCells.join(' | ')})`);
  await page.screenshot({path: path.join(shots, 'ui-list.png'), fullPage: true});

  // A filter narrows the list.
  const before = await page.locator('#jobs-body tr').count();
  await page.selectOption('#filter-state', 'Failed');
  const states = await page.locator('#jobs-body tr').evaluateAll(
    (rows) => rows.map((r) => r.dataset.state));
  check(states.length >= 1 && states.length < before && states.every((s) => s === 'Failed'),
    `the state filter leaves only Failed Jobs (${states.length} of ${before})`);
  await page.screenshot({path: path.join(shots, 'ui-filtered.png'), fullPage: true});
  await page.selectOption('#filter-state', '');

  // A failed Job's details say why.
  await row(jobs.failed).locator('a').click();
  await page.waitForFunction(() => document.querySelector('#detail-state').textContent === 'Failed');
  const why = await page.textContent('#detail-why');
  const describe = await page.textContent('#describe');
  check(describe.includes('ProcessFailed') && why.length > 0,
    `the details of the Failed Job say why: "${why}"`);
  check(!describe.includes('do-not-show-this-value'), 'the details show no env value');
  await page.screenshot({path: path.join(shots, 'ui-failed-details.png'), fullPage: true});

  // A followed log shows the lines as the task prints them, while it runs.
  await page.goto(`${origin}/#/namespaces/${ns}/jobs/${jobs.running}`);
  await page.waitForFunction(() => /tick 3\n/.test(document.querySelector('#log').textContent),
    null, {timeout: TIMEOUT});
  const log = await page.textContent('#log');
  const ticks = log.split('\n').filter((l) => l.startsWith('tick '));
  check(ticks.every((l, i) => l === `tick ${i + 1}`) && ticks.length >= 3,
    `the followed log shows the lines in order as printed (${ticks.length} so far)`);
  await page.screenshot({path: path.join(shots, 'ui-log-follow.png'), fullPage: true});

  // Hostile output is text: no script runs, no element is made, escapes are stripped.
  await page.goto(`${origin}/#/namespaces/${ns}/jobs/${jobs.hostile}`);
  await page.waitForFunction(() => document.querySelector('#log').textContent.includes('end-of-hostile'),
    null, {timeout: TIMEOUT});
  const hostileLog = await page.textContent('#log');
  check(hostileLog.includes('<script>alert("xss")</script>'), 'a printed <script> shows as text');
  check(hostileLog.includes('<img src=x onerror=alert(1)>'), 'a printed <img onerror> shows as text');
  check(!hostileLog.includes('\u001b') && hostileLog.includes('red text'),
    'ANSI escapes are stripped, their text kept');
  check(await page.locator('#log img, #log script, #describe img').count() === 0,
    'no element was made from the output');
  check(dialogs.length === 0, 'no script of the output ran (no alert)');
  await page.screenshot({path: path.join(shots, 'ui-hostile.png'), fullPage: true});

  // Cancel, after the confirmation.
  await page.goto(`${origin}/#/namespaces/${ns}/jobs/${jobs.cancel}`);
  await page.waitForFunction(() => document.querySelector('#detail-state').textContent === 'Running',
    null, {timeout: TIMEOUT});
  await page.click('#cancel');
  check(await page.locator('#confirm').isVisible(), 'cancel asks for a confirmation first');
  await page.screenshot({path: path.join(shots, 'ui-cancel-confirm.png')});
  await page.click('#confirm-yes');
  await page.waitForFunction(() => document.querySelector('#cancel-result').textContent.length > 0);
  check((await page.textContent('#cancel-result')) === 'Cancel requested.',
    'the cancel was requested');
  await page.waitForFunction(() => document.querySelector('#detail-state').textContent === 'Cancelled',
    null, {timeout: TIMEOUT});
  check(true, 'the Job ends Cancelled');
  await page.screenshot({path: path.join(shots, 'ui-cancelled.png'), fullPage: true});

  // A foreign page: its requests carry its Origin (refused), never the Strict cookie, and its
  // custom header would need a CORS preflight that is never granted.
  const evil = await context.newPage();
  await evil.route('http://evil.test/**', (route) => route.fulfill({
    status: 200, contentType: 'text/html', body: '<!doctype html><title>evil</title>'}));
  await evil.goto('http://evil.test/');
  const target = `${origin}/api/namespaces/${ns}/jobs/${jobs.running}/cancel`;
  const attempts = await evil.evaluate(async (t) => {
    const out = {};
    try {
      const r = await fetch(t, {method: 'POST', credentials: 'include',
        headers: {'X-Ayatori-UI': '1'}});
      out.withHeader = `answered ${r.status}`;
    } catch (e) {
      out.withHeader = 'blocked';
    }
    try {
      const r = await fetch(t.replace(/\/cancel$/, '').replace(/\/api\/namespaces\/[^/]+\/jobs\/[^/]+$/, '/api/jobs'),
        {credentials: 'include'});
      out.read = `answered ${r.status}`;
    } catch (e) {
      out.read = 'blocked';
    }
    await fetch(t, {method: 'POST', mode: 'no-cors', credentials: 'include'}).catch(() => {});
    return out;
  }, target);
  check(attempts.withHeader === 'blocked', `a foreign page cannot send the API header (${attempts.withHeader})`);
  check(attempts.read === 'blocked', `a foreign page cannot read the API (${attempts.read})`);
  const direct = await context.request.post(target, {headers: {'X-Ayatori-UI': '1', Origin: 'http://evil.test'}});
  check(direct.status() === 403, `a request with a foreign Origin is refused (${direct.status()})`);
  const still = await context.request.get(`${origin}/api/namespaces/${ns}/jobs/${jobs.running}`,
    {headers: {'X-Ayatori-UI': '1'}});
  check((await still.json()).row.desired !== 'Cancelled', 'the foreign page cancelled nothing');
  const noHeader = await context.request.get(`${origin}/api/jobs`);
  check(noHeader.status() === 403, 'an API call without the header is refused');
} catch (error) {
  failures.push(error.message);
} finally {
  await browser.close();
}
if (failures.length > 0) {
  for (const f of failures) console.error(f);
  process.exit(1);
}
console.log('all browser checks passed');
