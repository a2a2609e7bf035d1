import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPostroom, type Postroom } from '../../src/app/postroom.js';
import { startServer, type RunningServer } from '../../src/app/server.js';
import { loadConfig } from '../../src/config/config.js';
import { silentLogger } from '../../src/logging/logger.js';
import { startSandbox, startTraffic, type Sandbox } from '../../src/sandbox/index.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { freePort } from '../support/process.js';

/**
 * The console in a real browser (Debian's Chromium, driven by playwright-core; nothing is downloaded): an
 * operator logs in, finds a dead event through the filters, replays it and sees a real worker process it,
 * opens its correspondence's timeline, starts a reconcile run and ignores the gap it leaves open. Every
 * view is checked with axe-core (no serious or critical violation) and by keyboard. Screenshots go to
 * POSTROOM_CONSOLE_SCREENSHOTS (docs/console/ holds a set: see docs/console.md for the command).
 */
const CHROMIUM = '/usr/bin/chromium';
const hasChromium = fs.existsSync(CHROMIUM);
const pg = await adminUrl();
if (!hasChromium) console.warn(`[console browser tests] skipped: no Chromium at ${CHROMIUM} (apt-get install chromium; .ci/run does)`);

const OPERATOR = 'operator-token-browser-0123456789abcdef';
const VIEWER = 'viewer-token-browser-0123456789abcdef';
const SHOTS = process.env.POSTROOM_CONSOLE_SCREENSHOTS ?? path.join(os.tmpdir(), 'postroom-console-screenshots');
const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

describe.skipIf(!hasChromium || !pg)('the console in Chromium', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  let server: RunningServer;
  let postroom: Postroom;
  let browser: BrowserContext;
  let page: Page;
  let base: string;
  let profile: string;
  let failing = true;

  beforeAll(async () => {
    store = await openTestStore('postgres', { poolSize: 8 });
    sandbox = await startSandbox({ allowPrivateTargets: true, retrySchedule: [0.05, 0.1], attemptTimeoutMs: 1000, seed: 66 });
    const port = await freePort();
    const consolePort = await freePort();
    const endpoint = await sandbox.control.registerEndpoint({ url: `http://127.0.0.1:${port}/webhooks` });
    profile = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-chromium-'));
    const tokens = path.join(profile, 'tokens');
    fs.writeFileSync(tokens, `operator:otto:${OPERATOR}\nviewer:vera:${VIEWER}\n`);
    server = await startServer({
      config: loadConfig({
        NODE_ENV: 'test',
        PORT: String(port),
        POSTROOM_WEBHOOK_SECRETS: endpoint.secret,
        POSTROOM_CONSOLE_PORT: String(consolePort),
        POSTROOM_CONSOLE_TOKENS_FILE: tokens,
        POSTROOM_API_BASE_URL: sandbox.url,
        POSTROOM_API_KEY: sandbox.apiKey,
      }),
      logger: silentLogger(),
      db: store.db,
      role: 'ingress',
    });
    base = `http://127.0.0.1:${consolePort}`;
    // A real worker: participant acts fail (and go dead at once) until the test says otherwise.
    postroom = createPostroom({
      db: store.db,
      logger: silentLogger(),
      worker: { maxAttempts: 1, pollIntervalMs: 50, orderingHoldSeconds: 0 },
    });
    postroom.on('participant.acted', () => {
      if (failing) throw new Error('the archive service refused the act (HTTP 503)');
    });
    postroom.on('wallet.debited', () => undefined);
    await postroom.start();

    const traffic = startTraffic({
      target: sandbox,
      seed: 66,
      ratePerSecond: 40,
      maxOperations: 60,
      failureWindows: false,
      queuedShare: 0,
    });
    await traffic.done;
    await sandbox.control.waitForIdle(30_000);
    // A dead delivery whose event postroom never got: reconcile records it as a gap a handler needs.
    sandbox.control.seedDeliveries({ endpointId: endpoint.endpoint_id, count: 1, status: 'dead', eventType: 'wallet.debited' });
    for (let i = 0; i < 200; i++) {
      const n = await store.db.query(`SELECT 1 FROM inbox WHERE status = 'dead' LIMIT 1`);
      if (n.rowCount) break;
      await new Promise((r) => setTimeout(r, 50));
    }

    const { chromium } = await import('playwright-core');
    browser = await chromium.launchPersistentContext(path.join(profile, 'chromium'), {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1280, height: 860 },
    });
    page = browser.pages()[0] ?? (await browser.newPage());
    page.on('dialog', (d) => void d.accept());
    fs.mkdirSync(SHOTS, { recursive: true });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await postroom?.stop(2000);
    await server?.close();
    await sandbox?.close();
    await store?.cleanup();
    if (profile) fs.rmSync(profile, { recursive: true, force: true });
  });

  const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: false });

  /** axe-core in the page (evaluated by the driver, so the page's policy stays as served): serious and critical violations. */
  async function accessibilityProblems(): Promise<string[]> {
    await page.evaluate(axeSource);
    const result = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as {
      violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }>;
    };
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  }

  it('logs in, finds a dead event through the filters, replays it and sees it processed', async () => {
    await page.goto(`${base}/console/inbox?status=dead`);
    expect(page.url()).toContain('/console/login?next=');
    expect(await accessibilityProblems(), 'login').toEqual([]);
    await shot('login');
    await page.getByLabel('Console token').fill('not-the-token-at-all-0123456789');
    await page.getByRole('button', { name: 'Log in' }).click();
    expect(await page.getByRole('alert').textContent()).toContain('not valid');
    await page.getByLabel('Console token').fill(OPERATOR);
    await page.getByRole('button', { name: 'Log in' }).click();
    // Back where the link pointed.
    expect(page.url()).toBe(`${base}/console/inbox?status=dead`);

    await page.goto(`${base}/console/inbox`);
    await page.getByLabel('Status').selectOption('dead');
    await page.getByLabel('Type').fill('participant.acted');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(new URL(page.url()).searchParams.get('status')).toBe('dead');
    const rows = page.locator('table.events tbody tr');
    expect(await rows.count()).toBeGreaterThan(0);
    await shot('inbox');
    const eventId = (await rows.first().locator('td.id a').first().textContent())!;

    await rows.first().locator('td.id a').first().click();
    expect(decodeURIComponent(page.url())).toBe(`${base}/console/events/${eventId}`);
    expect(await page.locator('.status').first().textContent()).toBe('dead');
    const envelope = (await page.locator('pre.json').textContent())!;
    expect(envelope).toContain('"participant_id"');
    await shot('event');

    failing = false;
    await page.getByRole('button', { name: 'Replay this event' }).click();
    expect(await page.locator('.flash').textContent()).toContain(`Replayed ${eventId}`);
    for (let i = 0; i < 100; i++) {
      await page.reload();
      if ((await page.locator('.status').first().textContent()) === 'processed') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await page.locator('.status').first().textContent()).toBe('processed');
    const audit = await store.db.query<{ actor: string; action: string; target: string }>(
      `SELECT actor, action, target FROM console_audit`,
    );
    expect(audit.rows).toContainEqual({ actor: 'otto', action: 'replay_event', target: eventId });
  });

  it('opens the correspondence’s timeline from the event', async () => {
    await page.locator('dl.facts a').first().click();
    expect(page.url()).toContain('/console/correspondence/');
    expect(await page.locator('ol.timeline li').count()).toBeGreaterThan(0);
    expect(await page.getByRole('heading', { name: 'Re-reads by the reconciler' }).count()).toBe(1);
  });

  it('runs reconcile now, then ignores the gap it left open with a written reason', async () => {
    await page.goto(`${base}/console/runs`);
    await page.getByRole('button', { name: 'Reconcile now' }).click();
    expect(await page.locator('.flash').textContent()).toContain('Reconcile started');
    for (let i = 0; i < 300; i++) {
      const done = await store.db.query(`SELECT 1 FROM reconcile_runs WHERE outcome <> 'running'`);
      if (done.rowCount) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await page.reload();
    await shot('runs');
    // The run re-read the files it walked: a timeline now shows the service's answer beside the projection.
    const reread = await store.db.query<{ correspondence_id: string }>(
      `SELECT correspondence_id FROM correspondence_service_state ORDER BY read_at LIMIT 1`,
    );
    await page.goto(`${base}/console/correspondence/${encodeURIComponent(reread.rows[0]!.correspondence_id)}`);
    expect(await page.getByText(/by reconcile run \d+/).count()).toBe(1);
    expect(await page.getByText('The projection agrees with the service’s last answer.').count()).toBe(1);
    await shot('correspondence');
    await page.goto(`${base}/console`);
    await shot('overview');

    await page.goto(`${base}/console/gaps?status=open`);
    const gapLinks = page.locator('table tbody tr td a').first();
    expect(await gapLinks.count()).toBe(1);
    await shot('gaps');
    await gapLinks.click();
    await page.getByLabel(/Why it needs no recovery/).fill('test debits from the staging wallet; nothing to recover');
    await shot('gap');
    await page.getByRole('button', { name: /Ignore gap/ }).click();
    expect(await page.locator('.flash').textContent()).toMatch(/Gap #\d+ ignored/);
    expect(await page.locator('.status').first().textContent()).toBe('ignored');
    const gap = await store.db.query<{ status: string; reason: string }>(
      `SELECT status, reason FROM reconcile_gaps WHERE event_type = 'wallet.debited'`,
    );
    expect(gap.rows[0]).toEqual({
      status: 'ignored',
      reason: 'test debits from the staging wallet; nothing to recover (ignored by otto in the console)',
    });
    await page.goto(`${base}/console/audit`);
    await shot('audit');
    expect(await page.locator('tbody tr').count()).toBeGreaterThanOrEqual(3);
  });

  it('has no serious or critical accessibility violation on any view', async () => {
    const dead = await store.db.query<{ event_id: string; correspondence_id: string }>(
      `SELECT event_id, correspondence_id FROM inbox WHERE correspondence_id IS NOT NULL ORDER BY received_at LIMIT 1`,
    );
    const gap = await store.db.query<{ gap_id: number }>(`SELECT gap_id::int AS gap_id FROM reconcile_gaps LIMIT 1`);
    const run = await store.db.query<{ run_id: number }>(`SELECT run_id::int AS run_id FROM reconcile_runs LIMIT 1`);
    const views = [
      '/console',
      '/console/inbox',
      '/console/inbox?status=dead',
      `/console/events/${encodeURIComponent(dead.rows[0]!.event_id)}`,
      `/console/correspondence/${encodeURIComponent(dead.rows[0]!.correspondence_id)}`,
      '/console/gaps',
      `/console/gaps/${gap.rows[0]!.gap_id}`,
      '/console/runs',
      `/console/runs/${run.rows[0]!.run_id}`,
      '/console/audit',
      '/console/replay?status=dead',
    ];
    for (const v of views) {
      await page.goto(`${base}${v}`);
      expect(await accessibilityProblems(), v).toEqual([]);
    }
  });

  it('can be used by keyboard: Tab reaches the skip link, the views, the filters, the events and the actions, with focus visible', async () => {
    await page.goto(`${base}/console/inbox?status=processed`);
    const reached: string[] = [];
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      // A string, evaluated in the page: this file is type-checked without the DOM's types.
      const focused = (await page.evaluate(`(() => {
        const el = document.activeElement;
        if (!el || el === document.body) return null;
        const style = getComputedStyle(el);
        const label = (el.getAttribute('aria-label') || el.textContent || '').trim().slice(0, 30) || el.getAttribute('name') || '';
        return { what: el.tagName.toLowerCase() + ':' + label, outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2 };
      })()`)) as { what: string; outline: boolean } | null;
      if (!focused) continue;
      expect(focused.outline, `focus is visible on ${focused.what}`).toBe(true);
      reached.push(focused.what);
    }
    const order = (what: string | RegExp): number => reached.findIndex((r) => (typeof what === 'string' ? r === what : what.test(r)));
    expect(order('a:Skip to content')).toBe(0);
    expect(order('a:Inbox')).toBeGreaterThan(0);
    expect(order(/^select:/)).toBeGreaterThan(order('a:Inbox'));
    expect(order('button:Filter')).toBeGreaterThan(order(/^select:/));
    expect(order(/^a:evt_|^a:rec_/)).toBeGreaterThan(order('button:Filter'));

    // The skip link takes focus to the content; Enter on an event link opens it; its replay button is reachable.
    const dead = await store.db.query<{ event_id: string }>(`SELECT event_id FROM inbox WHERE status = 'dead' LIMIT 1`);
    await page.goto(`${base}/console/events/${encodeURIComponent(dead.rows[0]!.event_id)}`);
    let found = false;
    for (let i = 0; i < 40 && !found; i++) {
      await page.keyboard.press('Tab');
      found = (await page.evaluate(`document.activeElement && document.activeElement.textContent === 'Replay this event'`)) === true;
    }
    expect(found).toBe(true);
  });

  it('shows a viewer everything but the actions', async () => {
    // A persistent context has one cookie jar: log the operator out first.
    await browser.clearCookies();
    const viewerPage = page;
    await viewerPage.goto(`${base}/console/login`);
    await viewerPage.getByLabel('Console token').fill(VIEWER);
    await viewerPage.getByRole('button', { name: 'Log in' }).click();
    const dead = await store.db.query<{ event_id: string }>(`SELECT event_id FROM inbox WHERE status = 'dead' LIMIT 1`);
    await viewerPage.goto(`${base}/console/events/${encodeURIComponent(dead.rows[0]!.event_id)}`);
    expect(await viewerPage.getByRole('button', { name: 'Replay this event' }).count()).toBe(0);
    expect(await viewerPage.getByRole('button', { name: /Reveal/ }).count()).toBe(0);
    expect(await viewerPage.getByText('An operator can replay this event.').count()).toBe(1);
  });
});
