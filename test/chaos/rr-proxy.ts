import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small round-robin HTTP proxy in front of the postroom receivers, as a load
 * balancer would be. Each request goes to the next receiver; a receiver that
 * refuses the connection (killed, restarting) is skipped, since nothing was sent
 * to it. Any other failure after the request left (reset, time-out) is answered
 * 502: the sender cannot know whether it was stored, so it must retry.
 *
 * Every answer is RECORDED with the event id of the request, so the test can
 * check that no 2xx ever went out for an event that is not stored.
 */
export interface ProxyRecord {
  eventId: string;
  status: number;
  /** Index of the receiver that answered; -1 for the proxy's own answers (502/504, or a break). */
  backend: number;
  /** `status` of a 200 body (accepted / duplicate / quarantined). */
  bodyStatus: string | undefined;
  /** Receiver's Date header minus the proxy's clock at the answer (ms): shows a skewed clock. */
  dateSkewMs: number | undefined;
  /** False when the sender had already hung up (its attempt timed out). */
  passedBack: boolean;
  error?: string;
}

export interface RoundRobinProxy {
  url: string;
  records: ProxyRecord[];
  close(): Promise<void>;
}

export interface RoundRobinOptions {
  backends: number[];
  /** Upstream time-out; longer than the sender's attempt time-out, so the sender gives up first. */
  upstreamTimeoutMs?: number;
  /**
   * Deliberate breakage, only to prove the 2xx invariant can fail: answer 200 for the
   * events this selects without forwarding them (a lying load balancer).
   */
  ackWithoutForwarding?: (eventId: string) => boolean;
}

export async function startRoundRobinProxy(options: RoundRobinOptions): Promise<RoundRobinProxy> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const records: ProxyRecord[] = [];
  let next = 0;
  const upstreamTimeoutMs = options.upstreamTimeoutMs ?? 15_000;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', () => undefined);
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const eventId = String(req.headers['x-service-event-id'] ?? '');
      let replied = false;
      const reply = (record: Omit<ProxyRecord, 'eventId' | 'passedBack'>, headers: http.OutgoingHttpHeaders, payload: Buffer): void => {
        if (replied) return;
        replied = true;
        const passedBack = !res.destroyed && !req.socket.destroyed;
        records.push({ eventId, ...record, passedBack });
        if (res.destroyed) return;
        res.writeHead(record.status, headers);
        res.end(payload);
      };

      if (options.ackWithoutForwarding?.(eventId)) {
        reply(
          { status: 200, backend: -1, bodyStatus: 'accepted', dateSkewMs: undefined },
          { 'content-type': 'application/json' },
          Buffer.from('{"status":"accepted"}'),
        );
        return;
      }

      const start = next++ % options.backends.length;
      const tryBackend = (k: number): void => {
        const index = (start + k) % options.backends.length;
        const headers = { ...req.headers };
        delete headers.connection;
        delete headers['keep-alive'];
        const upstream = http.request(
          {
            host: '127.0.0.1',
            port: options.backends[index],
            method: req.method,
            path: req.url,
            headers,
            agent,
            timeout: upstreamTimeoutMs,
          },
          (up) => {
            const parts: Buffer[] = [];
            up.on('data', (c: Buffer) => parts.push(c));
            up.on('error', (err) =>
              reply(
                {
                  status: 502,
                  backend: -1,
                  bodyStatus: undefined,
                  dateSkewMs: undefined,
                  error: `upstream reply cut: ${(err as NodeJS.ErrnoException).code ?? err.message}`,
                },
                {},
                Buffer.alloc(0),
              ),
            );
            up.on('end', () => {
              const payload = Buffer.concat(parts);
              let bodyStatus: string | undefined;
              if (up.statusCode === 200) {
                try {
                  bodyStatus = (JSON.parse(payload.toString('utf8')) as { status?: string }).status;
                } catch {
                  bodyStatus = 'unparsable';
                }
              }
              const date = up.headers.date ? Date.parse(up.headers.date) : NaN;
              const out: http.OutgoingHttpHeaders = {};
              for (const h of ['content-type', 'retry-after']) if (up.headers[h] !== undefined) out[h] = up.headers[h];
              reply(
                {
                  status: up.statusCode ?? 502,
                  backend: index,
                  bodyStatus,
                  dateSkewMs: Number.isNaN(date) ? undefined : date - Date.now(),
                },
                out,
                payload,
              );
            });
          },
        );
        upstream.on('timeout', () => upstream.destroy(new Error('upstream timeout')));
        upstream.on('error', (err: NodeJS.ErrnoException) => {
          // Refused: nothing reached that receiver, so the next one may have it.
          if (err.code === 'ECONNREFUSED' && k + 1 < options.backends.length) return tryBackend(k + 1);
          reply(
            {
              status: err.message === 'upstream timeout' ? 504 : 502,
              backend: -1,
              bodyStatus: undefined,
              dateSkewMs: undefined,
              error: err.code ?? err.message,
            },
            {},
            Buffer.alloc(0),
          );
        });
        upstream.end(body);
      };
      tryBackend(0);
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    records,
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      agent.destroy();
    },
  };
}
