import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { createPgDb } from '../../src/db/pg.js';
import { createPgliteDb } from '../../src/db/pglite.js';
import type { Db } from '../../src/db/types.js';
import { silentLogger } from '../../src/logging/logger.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { generateKey } from '../../src/sandbox/keys.js';
import { createSecretCipher } from '../../src/secrets/crypto.js';
import { describeEndpointSecrets, listKnownEndpoints, loadEndpointSecrets } from '../../src/secrets/store.js';
import { runCli, type CliRun } from '../support/cli.js';
import { adminUrl, createPostgresDatabase, type TestDatabase } from '../support/db.js';

const ENCRYPTION_KEY = randomBytes(32);
const cipher = createSecretCipher(ENCRYPTION_KEY);

/** Runs the CLI as a person at a terminal typing `answer`. */
async function runInteractive(args: string[], env: Record<string, string>, answer: string): Promise<CliRun> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const stdin = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d) => (out += d));
  stderr.on('data', (d) => {
    err += d;
    if (String(d).includes('Type "yes"')) stdin.end(`${answer}\n`);
  });
  const code = await main(
    ['node', 'postroom', ...args],
    { NODE_ENV: 'test', ...env },
    Object.assign({ stdout, stderr, interactive: true }, { stdin }),
  );
  return { code, stdout: out, stderr: err };
}

describe('postroom endpoints / deliveries against the sandbox', () => {
  let sandbox: Sandbox;
  let database: TestDatabase | undefined;
  let dataDir: string | undefined;
  let env: Record<string, string>;
  const key = generateKey('sandbox');
  const liveKey = generateKey('live');
  const outputs: CliRun[] = [];

  const cli = async (args: string[], extra: Record<string, string> = {}): Promise<CliRun> => {
    const r = await runCli(args, { ...env, ...extra });
    outputs.push(r);
    return r;
  };
  /** The CLI's own store, opened between commands (the embedded one allows one process at a time). */
  async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const db = database
      ? createPgDb({ url: database.url, poolSize: 1, logger: silentLogger() })
      : await createPgliteDb({ dataDir: dataDir! });
    try {
      return await fn(db);
    } finally {
      await db.close();
    }
  }
  const endpointCount = (): number => sandbox.control.stats().endpoints;

  beforeAll(async () => {
    sandbox = await startSandbox({
      keys: [key, liveKey],
      allowPrivateTargets: true,
      retrySchedule: [0.02],
      attemptTimeoutMs: 500,
      seed: 11,
    });
    env = {
      POSTROOM_API_BASE_URL: sandbox.url,
      POSTROOM_API_KEY: key,
      POSTROOM_ENCRYPTION_KEY: ENCRYPTION_KEY.toString('hex'),
      POSTROOM_SECRET_OVERLAP_SECONDS: '900',
    };
    if (await adminUrl()) {
      database = await createPostgresDatabase();
      env.DATABASE_URL = database.url;
    } else {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-cli-endpoints-'));
      env.POSTROOM_DATA_DIR = dataDir;
    }
    expect((await cli(['migrate'])).code).toBe(0);
  });
  afterAll(async () => {
    await sandbox?.close();
    await database?.drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  let endpointId = '';

  it('create stores the secret encrypted, never prints it, and points the URL at /webhooks/<id>', async () => {
    const r = await cli([
      'endpoints',
      'create',
      '--url',
      'http://127.0.0.1:9/webhooks/{endpoint_id}',
      '--events',
      'participant.acted,correspondence.sealed',
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('plane: sandbox');
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    endpointId = String(out.endpoint_id);
    expect(out).toMatchObject({
      url: `http://127.0.0.1:9/webhooks/${endpointId}`,
      events: ['participant.acted', 'correspondence.sealed'],
      secret_stored: true,
    });
    expect(out).not.toHaveProperty('secret');
    const stored = await withDb((db) => loadEndpointSecrets(db, cipher, endpointId, new Date()));
    expect(stored.map((s) => s.state)).toEqual(['current']);
    expect(stored[0]!.secret).toMatch(/\S{16,}/);
    expect(r.stdout + r.stderr).not.toContain(stored[0]!.secret);
    const known = await withDb((db) => listKnownEndpoints(db));
    expect(known.find((e) => e.endpoint_id === endpointId)).toMatchObject({
      url: `http://127.0.0.1:9/webhooks/${endpointId}`,
      plane: 'sandbox',
    });
  });

  it.each(['http://127.0.0.1:9/webhooks', 'http://127.0.0.1:9/webhooks/', 'https://hooks.example.com/cds/webhooks?x=1'])(
    'refuses %s, where POST /webhooks would verify with POSTROOM_WEBHOOK_SECRETS and never the stored secret, naming the fix and calling nothing',
    async (url) => {
      const count = endpointCount();
      const r = await cli(['endpoints', 'create', '--url', url, '--events', 'participant.acted']);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('/webhooks/{endpoint_id}');
      expect(endpointCount()).toBe(count);
    },
  );

  it('an update that points a stored-secret endpoint at plain /webhooks is refused the same way', async () => {
    const r = await cli(['endpoints', 'update', endpointId, '--url', 'http://127.0.0.1:9/webhooks']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`/webhooks/${endpointId}`);
  });

  it('rotate-secret stores the new secret as current and keeps the old one for the overlap', async () => {
    const before = await withDb((db) => loadEndpointSecrets(db, cipher, endpointId, new Date()));
    const r = await cli(['endpoints', 'rotate-secret', endpointId, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out).toMatchObject({ endpoint_id: endpointId, secret_stored: true });
    expect(out).not.toHaveProperty('secret');
    expect(Date.parse(String(out.previous_accepted_until)) - Date.now()).toBeGreaterThan(800_000);
    const after = await withDb((db) => loadEndpointSecrets(db, cipher, endpointId, new Date()));
    expect(after.map((s) => s.state)).toEqual(['current', 'previous']);
    expect(after[1]!.secret).toBe(before[0]!.secret);
    expect(after[0]!.secret).not.toBe(before[0]!.secret);
    expect(r.stdout + r.stderr).not.toContain(after[0]!.secret);
  });

  it('--show-secret prints the secret, the same one it stored', async () => {
    const r = await cli(['endpoints', 'rotate-secret', endpointId, '--show-secret']);
    expect(r.code, r.stderr).toBe(0);
    const [current] = await withDb((db) => loadEndpointSecrets(db, cipher, endpointId, new Date()));
    expect(r.stdout).toContain(current!.secret);
  });

  it('--overlap 0s (after a leak) stops every older secret at once, not only the one it replaces', async () => {
    const before = await withDb((db) => loadEndpointSecrets(db, cipher, endpointId, new Date()));
    // Two routine rotations above: the first secret is still in its overlap too.
    expect(before.map((s) => s.state)).toEqual(['current', 'previous', 'previous']);
    const r = await cli(['endpoints', 'rotate-secret', endpointId, '--overlap', '0s']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/previous one is no longer accepted/);
    const after = await withDb((db) => loadEndpointSecrets(db, cipher, endpointId, new Date()));
    expect(after.map((s) => s.state)).toEqual(['current']);
    expect(before.map((s) => s.secret)).not.toContain(after[0]!.secret);
    const bad = await cli(['endpoints', 'rotate-secret', endpointId, '--overlap', 'soon']);
    expect(bad.stderr).toMatch(/--overlap: expected a duration/);
  });

  it('list, update, test and delete', async () => {
    const list = await cli(['endpoints', 'list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect((JSON.parse(list.stdout) as Array<{ endpoint_id: string }>).map((e) => e.endpoint_id)).toContain(endpointId);
    expect(list.stderr).toContain('plane: sandbox');

    const table = await cli(['endpoints', 'list']);
    expect(table.stdout).toMatch(/ENDPOINT_ID\s+URL\s+EVENTS/);

    const upd = await cli(['endpoints', 'update', endpointId, '--events', 'claim.claimed', 'claim.expired', '--json']);
    expect(upd.code, upd.stderr).toBe(0);
    expect(JSON.parse(upd.stdout)).toMatchObject({ endpoint_id: endpointId, events: ['claim.claimed', 'claim.expired'] });
    expect((await withDb((db) => listKnownEndpoints(db))).find((e) => e.endpoint_id === endpointId)?.events).toEqual([
      'claim.claimed',
      'claim.expired',
    ]);

    const test = await cli(['endpoints', 'test', endpointId, '--json']);
    expect(test.code, test.stderr).toBe(0);
    expect(JSON.parse(test.stdout)).toMatchObject({ endpoint_id: endpointId, sent: true });

    const del = await cli(['endpoints', 'delete', endpointId]);
    expect(del.code, del.stderr).toBe(0);
    expect(del.stdout).toContain(`deleted ${endpointId}`);
    expect((await withDb((db) => listKnownEndpoints(db))).some((e) => e.endpoint_id === endpointId)).toBe(false);
    const info = await withDb((db) => describeEndpointSecrets(db, endpointId));
    expect(info.every((i) => i.state === 'previous' && i.expires_at !== null)).toBe(true);
  });

  it('deliveries list pages through to the end, with filters, or stops at --limit', async () => {
    const created = JSON.parse(
      (await cli(['endpoints', 'create', '--url', 'http://127.0.0.1:9/d', '--events', 'participant.acted', '--json'])).stdout,
    ) as { endpoint_id: string };
    sandbox.control.seedDeliveries({ endpointId: created.endpoint_id, count: 230, status: 'dead' });
    sandbox.control.seedDeliveries({ endpointId: created.endpoint_id, count: 5, status: 'delivered' });
    const all = await cli(['deliveries', 'list', '--status', 'dead', '--endpoint', created.endpoint_id, '--json']);
    expect(all.code, all.stderr).toBe(0);
    const rows = JSON.parse(all.stdout) as Array<{ status: string; endpoint_id: string; delivery_id: string }>;
    expect(rows).toHaveLength(230);
    expect(new Set(rows.map((d) => d.delivery_id)).size).toBe(230);
    expect(rows.every((d) => d.status === 'dead' && d.endpoint_id === created.endpoint_id)).toBe(true);

    const few = await cli(['deliveries', 'list', '--endpoint', created.endpoint_id, '--limit', '7', '--json']);
    expect(JSON.parse(few.stdout)).toHaveLength(7);
    const none = await cli(['deliveries', 'list', '--endpoint', 'ep_none', '--json']);
    expect(JSON.parse(none.stdout)).toEqual([]);
    const table = await cli(['deliveries', 'list', '--endpoint', created.endpoint_id, '--status', 'delivered']);
    expect(table.stdout.trim().split('\n')).toHaveLength(6);
  });

  it('refuses to create without POSTROOM_ENCRYPTION_KEY before asking the service (the secret would be lost)', async () => {
    const count = endpointCount();
    const r = await cli(['endpoints', 'create', '--url', 'http://127.0.0.1:9/x', '--events', 'participant.acted'], {
      POSTROOM_ENCRYPTION_KEY: '',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/POSTROOM_ENCRYPTION_KEY is not set.*--show-secret/);
    expect(endpointCount()).toBe(count);
  });

  it('bad flags name the flag and what it accepts', async () => {
    const status = await cli(['deliveries', 'list', '--status', 'lost']);
    expect(status.code).toBe(64);
    expect(status.stderr).toMatch(/'--status <status>' argument 'lost' is invalid. Allowed choices are pending, delivered, dead/);
    expect(status.stderr).not.toMatch(/\n\s+at /);
    const url = await cli(['endpoints', 'create', '--url', 'not a url', '--events', 'participant.acted']);
    expect(url.stderr).toMatch(/--url: expected an absolute https URL/);
    const test = await cli(['endpoints', 'create', '--url', 'https://h.example/x', '--events', 'webhook.test']);
    expect(test.stderr).toMatch(/--events: webhook.test cannot be subscribed/);
    const noEvents = await cli(['endpoints', 'create', '--url', 'https://h.example/x']);
    expect(noEvents.stderr).toMatch(/--events is required/);
    const limit = await cli(['endpoints', 'list', '--limit', '0']);
    expect(limit.stderr).toMatch(/--limit: expected a whole number from 1 to 10000/);
    const nothing = await cli(['endpoints', 'update', 'ep_x']);
    expect(nothing.stderr).toMatch(/give --url and\/or --events/);
  });

  describe('on the live plane', () => {
    const live = (): Record<string, string> => ({ POSTROOM_API_KEY: liveKey });

    it('shows the plane, and a write without --yes outside a terminal is refused with nothing changed', async () => {
      const count = endpointCount();
      const r = await cli(['endpoints', 'create', '--url', 'http://127.0.0.1:9/live', '--events', 'participant.acted'], live());
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('plane: live');
      expect(r.stderr).toMatch(/LIVE plane.*--yes/);
      expect(endpointCount()).toBe(count);
      const list = await cli(['endpoints', 'list', '--json'], live());
      expect(list.code).toBe(0);
    });

    it('--yes confirms', async () => {
      const count = endpointCount();
      const r = await cli(
        ['endpoints', 'create', '--url', 'http://127.0.0.1:9/live', '--events', 'participant.acted', '--yes', '--json'],
        live(),
      );
      expect(r.code, r.stderr).toBe(0);
      expect(endpointCount()).toBe(count + 1);
    });

    it('on a terminal it asks, and only "yes" goes ahead', async () => {
      const count = endpointCount();
      const no = await runInteractive(
        ['endpoints', 'create', '--url', 'http://127.0.0.1:9/live', '--events', 'participant.acted'],
        { ...env, ...live() },
        'no',
      );
      outputs.push(no);
      expect(no.code).toBe(1);
      expect(no.stderr).toMatch(/not confirmed/);
      expect(endpointCount()).toBe(count);
      const yes = await runInteractive(
        ['endpoints', 'create', '--url', 'http://127.0.0.1:9/live', '--events', 'participant.acted'],
        { ...env, ...live() },
        'yes',
      );
      outputs.push(yes);
      expect(yes.code, yes.stderr).toBe(0);
      expect(endpointCount()).toBe(count + 1);
    });
  });

  it('no output of any command above carries an API key', () => {
    expect(outputs.length).toBeGreaterThan(15);
    for (const o of outputs) {
      expect(o.stdout + o.stderr).not.toContain(key);
      expect(o.stdout + o.stderr).not.toContain(liveKey);
    }
  });
});
