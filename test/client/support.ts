import { MockAgent } from 'undici';
import type { MockScope } from 'undici/types/mock-interceptor.js';
import { createApiClient, type ApiClientOptions } from '../../src/client/index.js';
import { createLogger } from '../../src/logging/logger.js';
import { createMetrics } from '../../src/metrics/metrics.js';

/** A key shaped like a real one; tests search every output for it. */
export const API_KEY = `svc_sandbox_${'Zq7'.repeat(12)}`;
export const ORIGIN = 'https://api.service.test';

export interface RecordedCall {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
}

/**
 * A client on a MockAgent (the network, faked) with instant, recorded sleeps, a
 * fixed jitter draw, a pino logger writing into an array, and its own metrics.
 */
export function mockedClient(overrides: Partial<ApiClientOptions> = {}) {
  const agent = new MockAgent({ enableCallHistory: true });
  agent.disableNetConnect();
  const pool = agent.get(ORIGIN);
  const sleeps: number[] = [];
  const logLines: string[] = [];
  const logger = createLogger({ level: 'trace', destination: { write: (line: string) => void logLines.push(line) } });
  const metrics = createMetrics({ defaultMetrics: false });
  const client = createApiClient({
    baseUrl: ORIGIN,
    apiKey: API_KEY,
    dispatcher: agent,
    logger,
    metrics,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 0.5,
    ...overrides,
  });

  /** Every request that reached the fake network, in order. */
  function calls(): RecordedCall[] {
    return (agent.getCallHistory()?.calls() ?? []).map((c) => {
      const url = new URL(c.fullUrl);
      return {
        method: c.method,
        path: `${url.pathname}${url.search}`,
        headers: { ...(c.headers as Record<string, string>) },
        body: typeof c.body === 'string' && c.body !== '' ? (JSON.parse(c.body) as unknown) : undefined,
      };
    });
  }

  /** Answers the next request matching method + path (query included, exact or RegExp). */
  function reply(
    method: string,
    path: string | RegExp,
    statusCode: number,
    data: unknown = '',
    headers: Record<string, string> = {},
  ): MockScope {
    return pool.intercept({ method, path: matcher(path) }).reply(statusCode, typeof data === 'string' ? data : JSON.stringify(data), {
      headers: { 'content-type': 'application/json', ...headers },
    });
  }

  /** Fails the next matching request at the network level. */
  function fail(method: string, path: string | RegExp, error: Error): MockScope {
    return pool.intercept({ method, path: matcher(path) }).replyWithError(error);
  }

  return {
    agent,
    pool,
    client,
    sleeps,
    logger,
    logLines,
    metrics,
    get calls() {
      return calls();
    },
    reply,
    fail,
  };
}

/** MockAgent hands function matchers the path with its query parameters sorted by name. */
function matcher(path: string | RegExp): RegExp | ((p: string) => boolean) {
  if (typeof path !== 'string') return path;
  const [base, query] = path.split('?');
  const sorted =
    query === undefined
      ? base!
      : `${base}?${[...new URLSearchParams(query)]
          .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
          .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
          .join('&')}`;
  return (p: string) => p === sorted;
}

export function errorWithCode(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

export async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail');
}
