import fs from 'node:fs';
import http from 'node:http';
import readline from 'node:readline';

export interface SignedRequest {
  id: string;
  signature: string;
  body: Buffer;
}

/** Lines `from` to `from + count` of a request file (bench/lib/wrk.ts: id, signature and body, tab-separated). */
export async function readRequests(file: string, from: number, count: number): Promise<SignedRequest[]> {
  const out: SignedRequest[] = [];
  const lines = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  let i = 0;
  for await (const line of lines) {
    if (i++ < from) continue;
    const [id, signature, ...rest] = line.split('\t');
    out.push({ id: id!, signature: signature!, body: Buffer.from(rest.join('\t')) });
    if (out.length === count) break;
  }
  lines.close();
  if (out.length < count) throw new Error(`${file} holds ${i} requests; ${from + count} were asked for`);
  return out;
}

/**
 * Sends every request once over `concurrency` kept-alive connections, the next as soon as one is answered
 * (a closed loop, as wrk runs), and counts the answers. For work counted per request rather than timed:
 * unlike wrk, it sends exactly this many.
 */
export async function sendAll(
  url: string,
  requests: readonly SignedRequest[],
  concurrency: number,
): Promise<{ ok: number; failed: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  let next = 0;
  let ok = 0;
  let failed = 0;
  const one = (r: SignedRequest): Promise<void> =>
    new Promise((resolve) => {
      const req = http.request(
        url,
        {
          method: 'POST',
          agent,
          headers: {
            'Content-Type': 'application/json',
            'Content-Length': r.body.length,
            'X-Service-Signature': r.signature,
            'X-Service-Event-Id': r.id,
            'X-Service-Event-Type': 'participant.acted',
          },
        },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode !== undefined && res.statusCode < 300) ok++;
            else failed++;
            resolve();
          });
        },
      );
      req.on('error', () => {
        failed++;
        resolve();
      });
      req.end(r.body);
    });
  const loop = async (): Promise<void> => {
    while (next < requests.length) await one(requests[next++]!);
  };
  try {
    await Promise.all(Array.from({ length: concurrency }, loop));
  } finally {
    agent.destroy();
  }
  return { ok, failed };
}
