import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type RunningServer } from '../../src/app/server.js';
import { loadConfig } from '../../src/config/config.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import { inboxRowFromEnvelope } from '../../src/inbox/envelope-row.js';
import { CONTENT_SECURITY_POLICY } from '../../src/console/http.js';
import { captureLog } from '../support/log-capture.js';
import { createLogger, silentLogger } from '../../src/logging/logger.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';
import { freePort } from '../support/process.js';
import { consoleClient } from './client.js';
import { parsePage } from './html.js';

const VIEWER = 'viewer-token-0123456789abcdefghij';
const OPERATOR = 'operator-token-0123456789abcdefghij';
const SECRET = 'whsec_console_test_0123456789abcdef';

describe('the console on the admin listener', () => {
  let store: TestStore;
  let server: RunningServer;
  let admin: string;
  let tokensFile: string;
  let dir: string;

  beforeAll(async () => {
    store = await openDefaultTestStore();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-console-'));
    tokensFile = path.join(dir, 'tokens');
    fs.writeFileSync(tokensFile, `# who may look and who may act\nviewer:vera:${VIEWER}\noperator:otto:${OPERATOR}\n`);
    const metricsPort = await freePort();
    server = await startServer({
      config: loadConfig({
        NODE_ENV: 'test',
        PORT: '0',
        POSTROOM_WEBHOOK_SECRETS: SECRET,
        POSTROOM_METRICS_PORT: String(metricsPort),
        POSTROOM_CONSOLE_TOKENS_FILE: tokensFile,
      }),
      logger: silentLogger(),
      db: store.db,
      role: 'ingress',
    });
    admin = `http://127.0.0.1:${metricsPort}`;
    await insertInboxBatch(store.db, [
      {
        ...inboxRowFromEnvelope(
          {
            event_id: 'evt_dead_1',
            type: 'participant.acted',
            at: '2026-12-05T02:00:00Z',
            data: { correspondence_id: 'cor_1', participant_id: 'p1', act: 'read', ref: 'r' },
          },
          'webhook',
        ),
      },
    ]);
    await store.db.query(`UPDATE inbox SET status = 'dead', attempts = 10, last_error = 'boom' WHERE event_id = 'evt_dead_1'`);
  });

  afterAll(async () => {
    await server?.close();
    await store?.cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is not served on the public webhook listener', async () => {
    for (const p of ['/console', '/console/login', '/console/static/console.js']) {
      const res = await fetch(`${server.url}${p}`, { redirect: 'manual' });
      expect(res.status, p).toBe(404);
    }
    // The admin listener still serves /metrics beside it.
    expect((await fetch(`${admin}/metrics`)).status).toBe(200);
  });

  it('serves only its own files under /static: names an object inherits are not files', async () => {
    const c = consoleClient(admin);
    expect((await c.get('/console/static/console.js')).status).toBe(200);
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'nothing.css']) {
      const res = await c.get(`/console/static/${name}`);
      expect(res.status, name).toBe(404);
      expect(res.headers.get('cache-control'), name).not.toMatch(/immutable/);
    }
  });

  it('gives nothing without a login: pages redirect to the login form, actions are refused', async () => {
    const c = consoleClient(admin);
    for (const p of [
      '/console',
      '/console/inbox?status=dead',
      '/console/events/evt_dead_1',
      '/console/gaps',
      '/console/runs',
      '/console/audit',
    ]) {
      const res = await c.get(p);
      expect(res.status, p).toBe(303);
      expect(res.headers.get('location')).toBe(`/console/login?next=${encodeURIComponent(p)}`);
    }
    const act = await c.post('/console/events/evt_dead_1/replay', { _csrf: 'x' });
    expect(act.status).toBe(401);
    const row = await store.db.query<{ status: string }>(`SELECT status FROM inbox WHERE event_id = 'evt_dead_1'`);
    expect(row.rows[0]!.status).toBe('dead');
  });

  it('refuses a wrong token, and sets an HttpOnly SameSite=Strict session cookie for a right one', async () => {
    const c = consoleClient(admin);
    for (const wrong of ['', 'nope', VIEWER.slice(0, -1), `${VIEWER}x`, OPERATOR.toUpperCase()]) {
      const res = await c.login(wrong);
      expect(res.status, wrong).toBe(401);
      expect(res.headers.get('set-cookie')).toBeNull();
    }
    // A link cannot carry a token of the file: only `postroom console`'s own token logs in from an address.
    const link = await c.get(`/console/login?token=${encodeURIComponent(OPERATOR)}`);
    expect(link.status).toBe(401);
    expect(link.headers.get('set-cookie')).toBeNull();
    const json = await fetch(`${admin}/console/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(json.status).toBe(415);
    const ok = await c.login(VIEWER);
    expect(ok.status).toBe(303);
    const cookie = ok.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^postroom_console=[A-Za-z0-9_-]{43}; Path=\/console; HttpOnly; SameSite=Strict$/);
    expect((await c.get('/console')).status).toBe(200);
    expect((await c.get(`/console/find?q=${'x'.repeat(300)}`)).status).toBe(400);
  });

  it('lets a viewer look but not act, even with its CSRF token', async () => {
    const c = consoleClient(admin);
    await c.login(VIEWER);
    const page = await (await c.get('/console/events/evt_dead_1')).text();
    expect(page).not.toContain('Replay this event');
    const csrf = await c.csrf();
    for (const [p, form] of [
      ['/console/events/evt_dead_1/replay', {}],
      ['/console/events/evt_dead_1/reveal', {}],
      ['/console/reconcile', {}],
      ['/console/replay', { status: 'dead' }],
      ['/console/gaps/1/ignore', { reason: 'not ours' }],
    ] as const) {
      const res = await c.post(p, { ...form, _csrf: csrf });
      expect(res.status, p).toBe(403);
    }
    const audit = await store.db.query('SELECT 1 FROM console_audit');
    expect(audit.rowCount).toBe(0);
  });

  it('refuses an action without the session’s CSRF token, and records one with it', async () => {
    const c = consoleClient(admin);
    await c.login(OPERATOR);
    const other = consoleClient(admin);
    await other.login(OPERATOR);
    const foreign = await other.csrf();
    for (const form of [{}, { _csrf: '' }, { _csrf: 'forged' }, { _csrf: foreign }] as Array<Record<string, string>>) {
      const res = await c.post('/console/events/evt_dead_1/replay', form);
      expect(res.status, JSON.stringify(form)).toBe(403);
    }
    expect((await store.db.query<{ status: string }>(`SELECT status FROM inbox WHERE event_id = 'evt_dead_1'`)).rows[0]!.status).toBe(
      'dead',
    );

    const done = await c.post('/console/events/evt_dead_1/replay', { _csrf: await c.csrf() });
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('/console/events/evt_dead_1');
    expect((await store.db.query<{ status: string }>(`SELECT status FROM inbox WHERE event_id = 'evt_dead_1'`)).rows[0]!.status).toBe(
      'received',
    );
    const audit = await store.db.query<{ actor: string; role: string; via: string; action: string; target: string; affected: number }>(
      'SELECT actor, role, via, action, target, affected FROM console_audit',
    );
    expect(audit.rows).toEqual([
      { actor: 'otto', role: 'operator', via: 'token', action: 'replay_event', target: 'evt_dead_1', affected: 1 },
    ]);
    // A GET never acts: the same path read with GET is not found.
    expect((await c.get('/console/events/evt_dead_1/replay')).status).toBe(404);
  });

  it('answers every page with the strict policy, no-store, nosniff and no-referrer, and nothing inline for CSP to block', async () => {
    const c = consoleClient(admin);
    await c.login(OPERATOR);
    for (const p of [
      '/console',
      '/console/inbox',
      '/console/events/evt_dead_1',
      '/console/correspondence/cor_1',
      '/console/gaps',
      '/console/runs',
      '/console/audit',
      '/console/login',
    ]) {
      const res = await c.get(p);
      expect(res.headers.get('content-security-policy'), p).toBe(CONTENT_SECURITY_POLICY);
      expect(CONTENT_SECURITY_POLICY).toContain("frame-ancestors 'none'");
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('cache-control')).toBe('no-store');
      const html = await res.text();
      for (const el of parsePage(html).elements) {
        expect(el.attrs.style, `${p}: style attribute on ${el.tag}`).toBeUndefined();
        expect(
          Object.keys(el.attrs).filter((a) => a.startsWith('on')),
          `${p}: handler on ${el.tag}`,
        ).toEqual([]);
        if (el.tag === 'script') expect(el.attrs.src, `${p}: inline script`).toMatch(/^\/console\/static\/console\.js\?v=/);
        if (el.tag === 'style') throw new Error(`${p}: inline <style>`);
      }
    }
  });

  it('ends the sessions of a token removed from the file', async () => {
    const c = consoleClient(admin);
    await c.login(VIEWER);
    expect((await c.get('/console')).status).toBe(200);
    const before = fs.readFileSync(tokensFile, 'utf8');
    try {
      fs.writeFileSync(tokensFile, `operator:otto:${OPERATOR}\n# vera left\n`);
      expect((await c.get('/console')).status).toBe(303);
      expect((await consoleClient(admin).login(VIEWER)).status).toBe(401);
    } finally {
      fs.writeFileSync(tokensFile, before);
    }
  });
});

describe('where the console is served, and when', () => {
  it('is off without a credential, and says how to turn it on', async () => {
    const store = await openDefaultTestStore();
    const logs = captureLog();
    const metricsPort = await freePort();
    const server = await startServer({
      config: loadConfig({ NODE_ENV: 'test', PORT: '0', POSTROOM_WEBHOOK_SECRETS: SECRET, POSTROOM_METRICS_PORT: String(metricsPort) }),
      logger: createLogger({ level: 'info', destination: logs.stream }),
      db: store.db,
      role: 'ingress',
    });
    try {
      expect((await fetch(`http://127.0.0.1:${metricsPort}/console`, { redirect: 'manual' })).status).toBe(404);
      const hint = logs.lines().filter((l) => String(l.msg).includes('console is off'));
      expect(hint).toHaveLength(1);
      expect(String(hint[0]!.msg)).toMatch(
        /POSTROOM_CONSOLE_TOKENS_FILE.*POSTROOM_CONSOLE_PORT or POSTROOM_METRICS_PORT.*postroom console/,
      );
    } finally {
      await server.close();
      await store.cleanup();
    }
  });

  it('refuses to start where it cannot be served safely: no admin listener, or a metrics listener bound elsewhere', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-console-')), 'tokens');
    fs.writeFileSync(file, `operator:otto:${OPERATOR}\n`);
    const base = { NODE_ENV: 'test', PORT: '0', POSTROOM_WEBHOOK_SECRETS: SECRET, POSTROOM_CONSOLE_TOKENS_FILE: file };
    await expect(startServer({ config: loadConfig(base), logger: silentLogger(), role: 'ingress' })).rejects.toThrow(
      /POSTROOM_CONSOLE_PORT: .*no admin listener.*never served on the webhook port/,
    );
    await expect(
      startServer({
        config: loadConfig({ ...base, HOST: '0.0.0.0', POSTROOM_METRICS_PORT: String(await freePort()) }),
        logger: silentLogger(),
        role: 'ingress',
      }),
    ).rejects.toThrow(/share the metrics listener on 0\.0\.0\.0.*bound to 127\.0\.0\.1/);
  });

  it('on a port of its own, bound to POSTROOM_CONSOLE_HOST, and trusts a proxy’s user header only when told to', async () => {
    const store = await openDefaultTestStore();
    const port = await freePort();
    const server = await startServer({
      config: loadConfig({
        NODE_ENV: 'test',
        PORT: '0',
        POSTROOM_WEBHOOK_SECRETS: SECRET,
        POSTROOM_CONSOLE_PORT: String(port),
        POSTROOM_CONSOLE_TRUSTED_USER_HEADER: 'X-Forwarded-User',
        POSTROOM_CONSOLE_PROXY_OPERATORS: 'olga',
        POSTROOM_CONSOLE_PROXY_VIEWERS: 'victor',
        POSTROOM_CONSOLE_TRUST_FORWARDED_PROTO: 'on',
      }),
      logger: silentLogger(),
      db: store.db,
      role: 'ingress',
    });
    try {
      const c = consoleClient(`http://127.0.0.1:${port}`);
      expect((await c.get('/console')).status).toBe(401);
      const olga = await c.get('/console', { 'x-forwarded-user': 'olga', 'x-forwarded-proto': 'https' });
      expect(olga.status).toBe(200);
      expect(olga.headers.get('set-cookie')).toMatch(/HttpOnly; SameSite=Strict; Secure$/);
      expect(await olga.text()).toMatch(/olga <span class="role role-operator">operator<\/span>/);
      const victor = consoleClient(`http://127.0.0.1:${port}`);
      const v = await victor.get('/console', { 'x-forwarded-user': 'victor' });
      expect(await v.text()).toMatch(/victor <span class="role role-viewer">viewer<\/span>/);
      expect(v.headers.get('set-cookie')).not.toMatch(/Secure/);
      expect((await consoleClient(`http://127.0.0.1:${port}`).get('/console', { 'x-forwarded-user': 'mallory' })).status).toBe(403);
      // The cookie alone is not enough: the proxy must name the user on every request.
      expect((await c.get('/console')).status).toBe(401);
    } finally {
      await server.close();
      await store.cleanup();
    }
  });
});
