import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../src/sandbox/index.js';
import { runCli } from '../support/cli.js';
import { freePort, spawnCli, waitForHttp } from '../support/process.js';
import { call, sandbox } from './helpers.js';

describe('postroom sandbox: flags', () => {
  const bad: Array<[string[], RegExp]> = [
    [['--port', 'http'], /--port: expected a whole number from 0 to 65535/],
    [['--port', '70000'], /--port/],
    [['--retry-schedule', '1,x'], /--retry-schedule: expected up to 50 comma-separated waits/],
    [['--attempt-timeout', '0'], /--attempt-timeout: expected seconds from 0.01 to 600/],
    [['--attempt-timeout', 'fast'], /--attempt-timeout/],
    [['--seed', '-1'], /--seed: expected a whole number from 0 to 4294967295/],
    [['--key', 'sk_test_123'], /--key: an API key starts with svc_sandbox_ or svc_live_/],
    [['--key', 'svc_sandbox_abc:webhooks.read,nope'], /--key: unknown scope "nope"; accepted scopes: org.read/],
    [['--key', 'svc_sandbox_abc:'], /--key: no scopes after ":"/],
    [['--drop-rate', '2'], /--drop-rate: expected a share from 0 to 1/],
    [['--duplicate-rate', 'lots'], /--duplicate-rate/],
    [['--signed-payload', 'hmac'], /--signed-payload: expected one of body \| timestamp.body/],
  ];
  for (const [args, message] of bad) {
    it(`refuses ${args.join(' ')} with a message naming the flag`, async () => {
      const run = await runCli(['sandbox', ...args]);
      expect(run.code).toBe(64);
      expect(run.stderr).toMatch(message);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    });
  }

  it('names --port when the port is taken and --host when the address is not local', async () => {
    const busy = await sandbox();
    try {
      const port = new URL(busy.url).port;
      const taken = await runCli(['sandbox', '--port', port]);
      expect(taken.code).toBe(1);
      expect(taken.stderr).toMatch(/--port: port \d+ on 127\.0\.0\.1 is already in use/);
    } finally {
      await busy.close();
    }
    const host = await runCli(['sandbox', '--port', '0', '--host', '192.0.2.1']);
    expect(host.stderr).toMatch(/--host: cannot listen on 192\.0\.2\.1/);
  });

  it('explains itself with examples', async () => {
    const run = await runCli(['sandbox', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('--retry-schedule <seconds,…>');
    expect(run.stdout).toContain('Examples:');
    expect(run.stdout).toContain('postroom sandbox trigger');
    const trigger = await runCli(['sandbox', 'trigger', '--help']);
    expect(trigger.stdout).toContain('participant.acted');
  });
});

describe('postroom sandbox trigger', () => {
  let sb: Sandbox;
  beforeAll(async () => {
    sb = await sandbox({ keys: ['svc_sandbox_cli_key'] });
  });
  afterAll(() => sb.close());

  it('fires events at a running sandbox', async () => {
    const run = await runCli([
      'sandbox',
      'trigger',
      'participant.acted',
      '--count',
      '3',
      '--act',
      'signed',
      '--url',
      sb.url,
      '--key',
      'svc_sandbox_cli_key',
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^fired 3 participant\.acted event\(s\)/);
    const signed = sb.control.events({ type: 'participant.acted' }).filter((e) => sb.control.event(e.event_id).data.act === 'signed');
    expect(signed).toHaveLength(3);
  });

  it('takes the key and URL from the environment, accepts an API URL, and prints JSON', async () => {
    const run = await runCli(['sandbox', 'trigger', 'correspondence.sealed', '--json'], {
      POSTROOM_API_KEY: 'svc_sandbox_cli_key',
      POSTROOM_API_BASE_URL: `${sb.url}/sender/v2`,
    });
    expect(run.code).toBe(0);
    const body = JSON.parse(run.stdout);
    expect(body.fired).toEqual([expect.objectContaining({ type: 'correspondence.sealed' })]);
    expect(body.events.map((e: { type: string }) => e.type)).toContain('correspondence.created');
  });

  it('says clearly what went wrong', async () => {
    const wrongKey = await runCli(['sandbox', 'trigger', 'correspondence.created', '--url', sb.url, '--key', 'svc_sandbox_wrong']);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/answered 401 invalid_api_key/);
    expect(wrongKey.stderr).not.toContain('svc_sandbox_wrong');
    const noKey = await runCli(['sandbox', 'trigger', 'correspondence.created', '--url', sb.url]);
    expect(noKey.stderr).toMatch(/--key: no API key/);
    const badType = await runCli(['sandbox', 'trigger', 'letter.sent', '--url', sb.url, '--key', 'svc_sandbox_cli_key']);
    expect(badType.stderr).toMatch(/<type>: expected one of correspondence.created/);
    const badCount = await runCli([
      'sandbox',
      'trigger',
      'correspondence.created',
      '--count',
      '0',
      '--url',
      sb.url,
      '--key',
      'svc_sandbox_cli_key',
    ]);
    expect(badCount.stderr).toMatch(/--count: expected a whole number from 1 to 10000/);
    const port = await freePort();
    const down = await runCli([
      'sandbox',
      'trigger',
      'correspondence.created',
      '--url',
      `http://127.0.0.1:${port}`,
      '--key',
      'svc_sandbox_cli_key',
    ]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/Could not reach the sandbox at http:\/\/127\.0\.0\.1:\d+: .*Is `postroom sandbox` running there\?/);
  });
});

describe('postroom sandbox as a process', () => {
  it('serves the API with the given key, prints a generated one otherwise, and stops on SIGTERM', async () => {
    const port = await freePort();
    const proc = spawnCli(
      ['sandbox', '--port', String(port), '--key', 'svc_sandbox_proc_key:webhooks.read', '--retry-schedule', '0.05,0.1', '--seed', '9'],
      {},
    );
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`, proc);
      const base = `http://127.0.0.1:${port}`;
      expect((await call(base, 'GET', '/sender/v2/webhook-deliveries', { key: 'svc_sandbox_proc_key' })).status).toBe(200);
      expect(
        (await call(base, 'POST', '/sender/v2/correspondence', { key: 'svc_sandbox_proc_key', body: {} })).body.error.required_scope,
      ).toBe('correspondence.write');
      expect((await call(base, 'GET', '/sandbox/stats', { key: 'svc_sandbox_proc_key' })).body.seed).toBe(9);
      expect(proc.output()).toContain(`postroom sandbox listening on ${base}`);
      expect(proc.output()).not.toContain('svc_sandbox_proc_key');
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect((await proc.exited).code).toBe(0);

    const port2 = await freePort();
    const generated = spawnCli(['sandbox', '--port', String(port2), '--json'], {});
    try {
      await waitForHttp(`http://127.0.0.1:${port2}/healthz`, generated);
      const line = generated
        .output()
        .split('\n')
        .find((l) => l.startsWith('{"url"'))!;
      const info = JSON.parse(line);
      expect(info.api_key).toMatch(/^svc_sandbox_[0-9a-f]{32}$/);
      expect((await call(info.url, 'GET', '/sender/v2/me', { key: info.api_key })).body.scopes).toHaveLength(24);
    } finally {
      generated.child.kill('SIGTERM');
    }
    expect((await generated.exited).code).toBe(0);
  });
});
