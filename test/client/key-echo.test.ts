import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/client/index.js';
import { adminUrl, createPostgresDatabase, type TestDatabase } from '../support/db.js';
import { spawnCli } from '../support/process.js';
import { API_KEY, caught, mockedClient } from './support.js';

/** Every way a JSON (or URL) encoder may spell a character: `_` as `\u005f`, `\u005F`, `s` as `\u0073`, `%5F`. */
function escapedForms(key: string): string[] {
  const u = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
  return [
    key.replace(/_/g, '\\u005f'),
    key.replace(/_/g, '\\u005F'),
    `${u(key[0]!)}${key.slice(1)}`,
    [...key].map(u).join(''),
    key.replace(/7/g, u('7')),
    key.replace(/_/g, '%5F'),
  ];
}

/** Undoes \uXXXX and %XX so a leak in any spelling shows up as the key itself. */
function decodeAll(text: string): string {
  return text
    .replace(/\\u([0-9a-fA-F]{4})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))
    .replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
}

/** A gateway that echoes the key back in its error bodies, escaped, in the message, details and nested arrays. */
function echoBody(key: string): string {
  const forms = escapedForms(key);
  return (
    `{"error":{"code":"forbidden","message":"key ${forms[0]} may not do this",` +
    `"details":{"seen":"${forms[2]}","all":["${forms[3]}",{"deep":"Bearer ${forms[4]}"}],"${forms[1]}":"${forms[5]}"}}}`
  );
}

describe('an API key the service echoes back escaped never leaks', () => {
  it('from the client: message, body, JSON, cause and log lines are clean after parsing', async () => {
    const m = mockedClient({ maxAttempts: 2 });
    m.reply('GET', '/sender/v2/me', 403, echoBody(API_KEY));
    m.reply('GET', /\/sender\/v2\/webhook-endpoints/, 503, echoBody(API_KEY));
    m.reply('GET', /\/sender\/v2\/webhook-endpoints/, 503, echoBody(API_KEY));
    const errors = [await caught(m.client.me()), await caught(m.client.webhookEndpoints.list())];
    for (const err of errors) {
      expect(err).toBeInstanceOf(ApiError);
      const e = err as ApiError;
      m.logger.error({ err: e, details: e.details }, 'service call failed');
      const text = decodeAll([e.message, e.stack, JSON.stringify(e), JSON.stringify(e.body), String(e.cause)].join('\n'));
      expect(text).not.toContain(API_KEY);
      expect(text).toContain('[redacted]');
    }
    expect(decodeAll(m.logLines.join(''))).not.toContain(API_KEY);
  });

  describe('from the CLI (a real process: stdout, stderr and its log lines)', () => {
    let service: http.Server;
    let base: string;
    let database: TestDatabase | undefined;

    beforeAll(async () => {
      service = http.createServer((req, res) => {
        req.resume();
        res.writeHead(403, { 'content-type': 'application/json' }).end(echoBody(API_KEY));
      });
      await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
      if (await adminUrl()) database = await createPostgresDatabase();
    });
    afterAll(async () => {
      await new Promise((resolve) => service.close(resolve));
      await database?.drop();
    });

    it.each([[['deliveries', 'list']], [['deliveries', 'list', '--json']], [['endpoints', 'list']], [['reconcile', '--since', '1h']]])(
      'postroom %j',
      async (args) => {
        const env: Record<string, string> = { POSTROOM_API_BASE_URL: base, POSTROOM_API_KEY: API_KEY, LOG_LEVEL: 'debug' };
        if (database) env.DATABASE_URL = database.url;
        else env.POSTROOM_DATA_DIR = `/tmp/postroom-key-echo-${process.pid}-${args.join('-')}`;
        if (args[0] === 'reconcile') await spawnCli(['migrate'], env).exited;
        const proc = spawnCli(args, env);
        const { code } = await proc.exited;
        expect(code).not.toBe(0);
        const out = proc.output();
        expect(out).toMatch(/403|insufficient_scope|forbidden/);
        expect(decodeAll(out)).not.toContain(API_KEY);
      },
    );
  });
});
