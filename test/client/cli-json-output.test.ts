import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { API_KEY } from './support.js';

const delivery = (i: number) => ({
  delivery_id: `dlv_${i}`,
  endpoint_id: 'ep_1',
  event_id: `evt_${i}`,
  event_type: 'participant.acted',
  status: 'dead',
  attempts: 3,
  created_at: '2026-11-18T10:00:00Z',
  last_error: null,
});

/** `--json` is complete JSON or nothing: a failed walk must not leave a partial array on stdout. */
describe('deliveries list --json when the service fails', () => {
  let service: http.Server;
  let base: string;
  /** How the service answers the n-th page request. */
  let script: Array<(res: http.ServerResponse) => void> = [];
  let calls = 0;
  const answerWith = (steps: typeof script): void => {
    script = steps;
    calls = 0;
  };

  beforeAll(async () => {
    service = http.createServer((req, res) => {
      req.resume();
      const answer = script[calls++] ?? ((r: http.ServerResponse) => r.writeHead(500).end());
      answer(res);
    });
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => service.close(resolve));
  });

  const page = (items: unknown[], next: string | null) => (res: http.ServerResponse) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ deliveries: items, next_cursor: next }));
  const refused = (res: http.ServerResponse) =>
    res.writeHead(403, { 'content-type': 'application/json' }).end('{"error":{"code":"forbidden","message":"no"}}');
  const env = () => ({ POSTROOM_API_BASE_URL: base, POSTROOM_API_KEY: API_KEY, POSTROOM_API_MAX_ATTEMPTS: '1' });

  it('an error on the first page prints nothing on stdout', async () => {
    answerWith([refused]);
    const r = await runCli(['deliveries', 'list', '--json'], env());
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/403/);
  });

  it('an error on a later page prints nothing on stdout either', async () => {
    answerWith([page([delivery(1), delivery(2)], 'c2'), refused]);
    const r = await runCli(['deliveries', 'list', '--json'], env());
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe('');
  });

  it('a complete walk prints one JSON array', async () => {
    answerWith([page([delivery(1), delivery(2)], 'c2'), page([delivery(3)], null)]);
    const r = await runCli(['deliveries', 'list', '--json'], env());
    expect(r.code, r.stderr).toBe(0);
    expect((JSON.parse(r.stdout) as Array<{ delivery_id: string }>).map((d) => d.delivery_id)).toEqual(['dlv_1', 'dlv_2', 'dlv_3']);
    answerWith([page([], null)]);
    expect(JSON.parse((await runCli(['deliveries', 'list', '--json'], env())).stdout)).toEqual([]);
  });
});
