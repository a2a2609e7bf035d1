import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { sign } from '../../src/signature/index.js';

const run = promisify(execFile);

export function requireWrk(): void {
  try {
    fs.accessSync('/usr/bin/wrk', fs.constants.X_OK);
  } catch {
    throw new Error('the ingest benchmark drives load with wrk: install it with `apt-get install -y wrk`');
  }
}

/**
 * Pre-signs `count` realistic events (a share of them repeats of earlier ones) so
 * the load generator spends nothing on HMAC; one line per request.
 */
export function writeRequests(count: number, secret: string, duplicateShare: number): { file: string; unique: number } {
  const file = path.join(os.tmpdir(), `postroom-bench-${randomUUID()}.tsv`);
  const fd = fs.openSync(file, 'w');
  const t = Math.floor(Date.now() / 1000);
  const sent: Array<[string, string, string]> = [];
  let unique = 0;
  for (let i = 0; i < count; i++) {
    let line: [string, string, string];
    if (sent.length > 100 && (i * 7919) % 100 < duplicateShare * 100) {
      line = sent[(i * 31) % sent.length]!;
    } else {
      const id = `evt_${randomUUID()}`;
      const body = JSON.stringify({
        event_id: id,
        type: 'participant.acted',
        at: new Date().toISOString(),
        data: { correspondence_id: `cor_${i % 500}`, participant_id: `par_${i % 7}`, act: 'read', ref: `emp-${i % 1000}` },
      });
      line = [id, sign({ secret, body, timestamp: t }), body];
      unique++;
      if (sent.length < 50_000) sent.push(line);
    }
    fs.writeSync(fd, `${line.join('\t')}\n`);
  }
  fs.closeSync(fd);
  return { file, unique };
}

/**
 * The signature window the receivers are started with when they read cached
 * request files: the files are signed once and replayed for up to a day, and a
 * wider window costs a receiver nothing per request.
 */
export const CACHED_TOLERANCE_SECONDS = 86_400;
const CACHE_MAX_AGE_MS = (CACHED_TOLERANCE_SECONDS - 3600) * 1000;

/**
 * Like writeRequests (unique events, none repeated) but signed once and kept in the
 * temp folder for later runs: signing half a million bodies took longer than the
 * 10 s it measures. Reused files repeat event ids, so each run must start from an
 * empty table (a fresh database per bench, a TRUNCATE per receiver run). Receivers
 * reading them need CACHED_TOLERANCE_SECONDS as their signature window.
 */
export function cachedRequests(count: number, secret: string): { file: string; unique: number; reused: boolean } {
  const dir = path.join(os.tmpdir(), 'postroom-bench-requests');
  fs.mkdirSync(dir, { recursive: true });
  const key = createHash('sha256').update(secret).digest('hex').slice(0, 12);
  const file = path.join(dir, `${key}-${count}.tsv`);
  try {
    if (Date.now() - fs.statSync(file).mtimeMs < CACHE_MAX_AGE_MS) return { file, unique: count, reused: true };
  } catch {
    // not made yet
  }
  const fresh = writeRequests(count, secret, 0);
  fs.renameSync(fresh.file, file);
  return { file, unique: fresh.unique, reused: false };
}

const LUA = (file: string): string => `
local reqs = {}
for line in io.lines("${file}") do
  local id, sig, body = line:match("([^\\t]+)\\t([^\\t]+)\\t(.*)")
  reqs[#reqs + 1] = wrk.format("POST", "/webhooks", { ["Host"] = "127.0.0.1", ["Content-Type"] = "application/json", ["X-Service-Signature"] = sig, ["X-Service-Event-Id"] = id, ["X-Service-Event-Type"] = "participant.acted" }, body)
end
local i = 0
request = function()
  i = i + 1
  if i > #reqs then i = 1 end
  return reqs[i]
end
done = function(summary, latency, requests)
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"non2xx":%d,"socket_errors":%d,"timeouts":%d,"p50_us":%d,"p99_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write, summary.errors.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
`;

export interface WrkResult {
  requests: number;
  durationS: number;
  non2xx: number;
  socketErrors: number;
  timeouts: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export async function runWrk(url: string, requestsFile: string, options: { connections: number; seconds: number }): Promise<WrkResult> {
  const script = path.join(os.tmpdir(), `postroom-bench-${randomUUID()}.lua`);
  fs.writeFileSync(script, LUA(requestsFile));
  try {
    const { stdout } = await run(
      'wrk',
      ['-t1', `-c${options.connections}`, `-d${options.seconds}s`, '--timeout', '10s', '-s', script, url],
      { maxBuffer: 10 * 1024 * 1024 },
    );
    const line = stdout.split('\n').find((l) => l.startsWith('WRKJSON '));
    if (!line) throw new Error(`wrk printed no summary:\n${stdout}`);
    const j = JSON.parse(line.slice(8)) as Record<string, number>;
    return {
      requests: j.requests!,
      durationS: j.duration_us! / 1e6,
      non2xx: j.non2xx!,
      socketErrors: j.socket_errors!,
      timeouts: j.timeouts!,
      p50Ms: j.p50_us! / 1000,
      p99Ms: j.p99_us! / 1000,
      maxMs: j.max_us! / 1000,
    };
  } finally {
    fs.rmSync(script, { force: true });
  }
}
