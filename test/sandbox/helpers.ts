import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { startSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox/index.js';

export interface ApiResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** A plain JSON call; `key` null sends no Authorization header. */
export async function call(
  base: string,
  method: string,
  path: string,
  options: { key?: string | null; body?: unknown; headers?: Record<string, string>; rawBody?: string } = {},
): Promise<ApiResponse> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await request(`${base}${path}`, { method: method as 'GET', headers, ...(body === undefined ? {} : { body }) });
  const text = await res.body.text();
  return { status: res.statusCode, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** A sandbox on 127.0.0.1 with retries compressed to milliseconds. */
export function sandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  return startSandbox({
    allowPrivateTargets: true,
    retrySchedule: [0.02, 0.04],
    attemptTimeoutMs: 1_000,
    queueDelayMs: 20,
    seed: 1,
    ...options,
  });
}

export interface Captured {
  headers: http.IncomingHttpHeaders;
  raw: Buffer;
  event: { event_id: string; type: string; at: string; data: Record<string, unknown> };
  at: number;
}

export interface CaptureServer {
  url: string;
  received: Captured[];
  /** Resolves once `n` requests arrived. */
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A receiver that records every request and answers what `respond` says (200 by default). */
export async function captureServer(respond: (c: Captured, index: number) => number | Promise<number> = () => 200): Promise<CaptureServer> {
  const received: Captured[] = [];
  let waiters: Array<{ n: number; resolve: () => void }> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      // A body that is not JSON is kept as null: thrown here, it would surface as an uncaught error of whatever test runs.
      let event: Captured['event'];
      try {
        event = JSON.parse(raw.toString('utf8')) as Captured['event'];
      } catch {
        event = null as unknown as Captured['event'];
      }
      const c: Captured = { headers: req.headers, raw, event, at: Date.now() };
      const index = received.push(c) - 1;
      waiters = waiters.filter((w) => {
        if (received.length >= w.n) w.resolve();
        return received.length < w.n;
      });
      void Promise.resolve(respond(c, index)).then((status) => {
        if (!res.destroyed) res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ status }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received,
    waitFor(n, timeoutMs = 10_000) {
      if (received.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`only ${received.length} of ${n} requests arrived`)), timeoutMs);
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(t);
            resolve();
          },
        });
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export const NIN = { delivered: '12345678900', held: '12345678908', undeliverable: '12345678909' } as const;

export function letter(recipients: Array<{ nin: string; ref: string }>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    kind: 'letter',
    subject: 'Your statement',
    content_type: 'text/plain',
    document_ids: [],
    recipients: recipients.map((r) => ({ addressing: { type: 'nin', nin: r.nin }, display_name: r.ref, ref: r.ref })),
    ...extra,
  };
}
