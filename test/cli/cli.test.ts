import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram, main } from '../../src/cli/main.js';
import { createCliContext } from '../../src/cli/context.js';
import type { Command } from 'commander';
import { PassThrough } from 'node:stream';
import { createInboxWriter } from '../../src/inbox/group-commit.js';
import { silentLogger } from '../../src/logging/logger.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { runCli } from '../support/cli.js';

function commands(cmd: Command): Command[] {
  return cmd.commands.flatMap((c) => [c, ...commands(c)]);
}

describe('CLI basics', () => {
  it('refuses a bad flag before it opens the store, so the mistake is what it reports', async () => {
    // A data folder that is a file: a command that opened the store before reading its flags would fail on that.
    const env = { POSTROOM_DATA_DIR: new URL(import.meta.url).pathname };
    const cases: Array<[string[], string]> = [
      [['gaps', 'list', '--limit', 'x1'], '--limit'],
      [['console', 'audit', '--limit', 'x1'], '--limit'],
      [['inbox', 'replay', '--status', 'dead', '--since', 'x1'], '--since'],
      [['inbox', 'list', '--limit', 'x1'], '--limit'],
    ];
    for (const [args, flag] of cases) {
      const r = await runCli(args, env);
      expect({ args, code: r.code, names: r.stderr.includes(flag) }, r.stderr).toEqual({ args, code: 64, names: true });
    }
  });

  it('teaches with --help at every level, with an example', async () => {
    const io = { stdout: new PassThrough(), stderr: new PassThrough(), interactive: false };
    const program = buildProgram(createCliContext({}, io));
    const paths = [
      [],
      ...commands(program).map((c) => {
        const names: string[] = [];
        for (let p: Command | null = c; p && p.parent; p = p.parent) names.unshift(p.name());
        return names;
      }),
    ];
    for (const p of paths) {
      const r = await runCli([...p, '--help']);
      expect(r.code, `postroom ${p.join(' ')} --help`).toBe(0);
      expect(r.stdout, `postroom ${p.join(' ')} --help`).toMatch(/Usage: postroom/);
      if (p.length > 0 && commands(program).find((c) => c.name() === p[p.length - 1])?.commands.length === 0) {
        expect(r.stdout, `postroom ${p.join(' ')} --help has an example`).toMatch(/Example/);
      }
    }
  });

  it('gives a clear usage error for unknown commands and flags, without a stack trace', async () => {
    const r = await runCli(['frobnicate']);
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(/unknown command/);
    const bad = await runCli(['inbox', 'list', '--status', 'lost'], { POSTROOM_DATA_DIR: '/nonexistent/never' });
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/--status <status>' argument 'lost' is invalid. Allowed choices are received, processing/);
    expect(bad.stderr).not.toMatch(/\n\s+at /);
  });

  it('names the setting when the environment is wrong', async () => {
    const r = await runCli(['inbox', 'list'], { POSTROOM_SIGNATURE_TOLERANCE_SECONDS: 'soon' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/POSTROOM_SIGNATURE_TOLERANCE_SECONDS: expected a whole number/);
  });
});

describe.skipIf(!(await adminUrl()))('inbox list and show against Postgres', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore('postgres');
    const writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 10 });
    for (const [i, type] of ['participant.acted', 'claim.claimed', 'participant.acted'].entries()) {
      const payload = { event_id: `evt_cli_${i}`, type, at: '2026-11-18T10:15:00Z', data: { correspondence_id: 'cor_1' } };
      await writer.submit({
        eventId: payload.event_id,
        type,
        occurredAt: payload.at,
        payloadJson: JSON.stringify(payload),
        rawBody: Buffer.from(JSON.stringify(payload)),
        signatureHeader: 't=1,v1=ab',
        headers: null,
        endpointId: null,
        source: 'webhook',
        correspondenceId: 'cor_1',
        secretIndex: 0,
        status: 'received',
        lastError: null,
      });
    }
    await writer.close();
  });
  afterAll(async () => store?.cleanup());

  it('inbox list --json prints records with the documented fields, filtered', async () => {
    const r = await runCli(['inbox', 'list', '--json', '--type', 'participant.acted'], { DATABASE_URL: store.url! });
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    expect(rows.map((x) => x.event_id).sort()).toEqual(['evt_cli_0', 'evt_cli_2']);
    for (const row of rows)
      expect(Object.keys(row)).toEqual(expect.arrayContaining(['event_id', 'type', 'status', 'source', 'received_at']));
  });

  it('inbox show prints the payload, and a clear error for an unknown id', async () => {
    const r = await runCli(['inbox', 'show', 'evt_cli_1', '--json'], { DATABASE_URL: store.url! });
    expect(JSON.parse(r.stdout)).toMatchObject({ event_id: 'evt_cli_1', payload: { type: 'claim.claimed' } });
    expect(JSON.parse(r.stdout)).not.toHaveProperty('signature_header');
    const missing = await runCli(['inbox', 'show', 'evt_nope'], { DATABASE_URL: store.url! });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/No event evt_nope/);
  });

  it('inbox show --raw prints the exact stored bytes of a quarantined event, and --signature its signature header', async () => {
    const raw = Buffer.concat([
      Buffer.from('{"event_id":"evt_cli_q","at":"2026-02-30T00:00:00Z",'),
      Buffer.from([0xff, 0xfe, 0x00, 0x0a]),
      Buffer.from('}'),
    ]);
    const writer = createInboxWriter({ db: store.db, logger: silentLogger(), maxBatch: 1 });
    await writer.submit({
      eventId: 'evt_cli_q',
      type: 'unknown',
      occurredAt: null,
      payloadJson: null,
      rawBody: raw,
      signatureHeader: 't=1700000000,v1=abcdef0123',
      headers: null,
      endpointId: null,
      source: 'webhook',
      correspondenceId: null,
      secretIndex: 0,
      status: 'quarantined',
      lastError: 'body is not valid UTF-8',
    });
    await writer.close();

    const chunks: Buffer[] = [];
    const stdout = new PassThrough();
    stdout.on('data', (d: Buffer) => chunks.push(d));
    const code = await main(
      ['node', 'postroom', 'inbox', 'show', 'evt_cli_q', '--raw'],
      { NODE_ENV: 'test', DATABASE_URL: store.url! },
      { stdout, stderr: new PassThrough(), interactive: false },
    );
    expect(code).toBe(0);
    expect(Buffer.concat(chunks).equals(raw)).toBe(true);

    const text = await runCli(['inbox', 'show', 'evt_cli_q', '--signature'], { DATABASE_URL: store.url! });
    expect(text.stdout).toMatch(/signature_header\s+t=1700000000,v1=abcdef0123/);
    expect(text.stdout).toMatch(/status\s+quarantined/);
    const json = await runCli(['inbox', 'show', 'evt_cli_q', '--json', '--raw', '--signature'], { DATABASE_URL: store.url! });
    expect(JSON.parse(json.stdout)).toMatchObject({
      status: 'quarantined',
      signature_header: 't=1700000000,v1=abcdef0123',
      raw_body_base64: raw.toString('base64'),
    });
  });
});
