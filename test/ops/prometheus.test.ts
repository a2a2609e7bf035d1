import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { adminUrl, createPostgresDatabase, type TestDatabase } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { freePort, ROOT, spawnCli, waitForHttp, type CliProcess } from '../support/process.js';
import { TEST_SECRET } from '../support/receiver.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';

/**
 * A real Prometheus (Debian's `prometheus` package; .ci/run installs it) scrapes a real
 * `postroom serve` and evaluates deploy/prometheus/alerts.yml. The expressions are the
 * shipped ones; only each alert's `for:` is set to 0s so the test does not wait minutes.
 */
const PROMETHEUS = process.env.PROMETHEUS_BIN ?? 'prometheus';
const hasPrometheus = spawnSync(PROMETHEUS, ['--version'], { stdio: 'ignore' }).status === 0;
const hasPostgres = (await adminUrl()) !== undefined;
if (!hasPrometheus)
  console.warn(`[postroom tests] skipped the real-Prometheus test: no "${PROMETHEUS}" binary (apt-get install prometheus; .ci/run does)`);

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

interface Alert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
}

async function api<T>(base: string, pathAndQuery: string): Promise<T> {
  const res = await fetch(`${base}${pathAndQuery}`);
  const body = (await res.json()) as { status: string; data: T };
  if (body.status !== 'success') throw new Error(`${pathAndQuery}: ${JSON.stringify(body)}`);
  return body.data;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, diagnostics: () => string, timeoutMs = 40_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}\n${diagnostics()}`);
}

function startPrometheus(dir: string, port: number, target: string): ChildProcess & { output(): string } {
  const rules = fs.readFileSync(path.join(ROOT, 'deploy/prometheus/alerts.yml'), 'utf8').replace(/^(\s+)for: \S+$/gm, '$1for: 0s');
  fs.writeFileSync(path.join(dir, 'alerts.yml'), rules);
  fs.writeFileSync(
    path.join(dir, 'prometheus.yml'),
    `global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\n  evaluation_interval: 1s\nrule_files:\n  - alerts.yml\nscrape_configs:\n  - job_name: postroom\n    static_configs:\n      - targets: ["${target}"]\n`,
  );
  const child = spawn(
    PROMETHEUS,
    [
      `--config.file=${path.join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${path.join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return Object.assign(child, { output: () => out });
}

describe.skipIf(!hasPrometheus || !hasPostgres)('a real Prometheus scraping postroom serve', () => {
  it('sees the real series, and the dead-event and store-down alerts fire from them', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-prom-'));
    cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
    const database: TestDatabase = await createPostgresDatabase();
    cleanups.push(database.drop);
    // Between postroom and Postgres, so the test can take the store away.
    const u = new URL(database.url);
    const proxy: TcpProxy = await startTcpProxy({ host: u.hostname, port: Number(u.port) });
    cleanups.push(() => proxy.close());

    const port = await freePort();
    const serve: CliProcess = spawnCli(['serve', '--role', 'all', '--handlers', path.join(ROOT, 'test/ops/fixtures/failing-handlers.js')], {
      DATABASE_URL: proxy.url(database.url),
      PORT: String(port),
      POSTROOM_WEBHOOK_SECRETS: TEST_SECRET,
      POSTROOM_MAX_ATTEMPTS: '1',
      POSTROOM_WORKER_POLL_MS: '100',
    });
    cleanups.push(async () => {
      serve.child.kill('SIGTERM');
      await serve.exited;
    });
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, serve);

    const promPort = await freePort();
    const prometheus = startPrometheus(dir, promPort, `127.0.0.1:${port}`);
    cleanups.push(async () => {
      prometheus.kill('SIGTERM');
      await new Promise((r) => prometheus.once('exit', r));
    });
    const prom = `http://127.0.0.1:${promPort}`;
    const diagnostics = (): string => `prometheus:\n${prometheus.output()}\npostroom:\n${serve.output()}`;
    const value = async (query: string): Promise<number | undefined> => {
      const data = await api<{ result: Array<{ value: [number, string] }> }>(prom, `/api/v1/query?query=${encodeURIComponent(query)}`);
      return data.result.length ? Number(data.result[0]!.value[1]) : undefined;
    };
    const firing = async (name: string): Promise<Alert | undefined> => {
      const data = await api<{ alerts: Alert[] }>(prom, '/api/v1/alerts');
      return data.alerts.find((a) => a.labels.alertname === name && a.state === 'firing');
    };

    // The scrape works and carries postroom's series and Node's under their stock names.
    expect(await until('a successful scrape', async () => ((await value('up{job="postroom"}')) === 1 ? 1 : undefined), diagnostics)).toBe(
      1,
    );
    expect(await until('postroom_store_up', () => value('postroom_store_up'), diagnostics)).toBe(1);
    expect(
      await until('process_resident_memory_bytes', () => value('process_resident_memory_bytes{job="postroom"}'), diagnostics),
    ).toBeGreaterThan(0);
    expect(await firing('PostroomEventsDead')).toBeUndefined();
    expect(await firing('PostroomStoreDown')).toBeUndefined();

    // The first dead event of its type: the counter series must already exist at 0 for increase() to see it.
    await until(
      'the dead counter at 0',
      () => value('postroom_events_processed_total{status="dead",event_type="participant.acted"}'),
      diagnostics,
    );
    const res = await postEvent(`http://127.0.0.1:${port}/webhooks`, makeEvent({ type: 'participant.acted' }), { secret: TEST_SECRET });
    expect(res.status).toBe(200);
    await until('PostroomEventsDead firing', () => firing('PostroomEventsDead'), diagnostics);
    expect(await value('sum(postroom_events_processed_total{status="dead"})')).toBe(1);

    // The store goes away: the scrape still succeeds, store_up turns 0 and the alert fires.
    proxy.cut();
    const storeDown = await until('PostroomStoreDown firing', () => firing('PostroomStoreDown'), diagnostics);
    expect(storeDown.labels).toMatchObject({ severity: 'critical', service: 'postroom' });
    expect(await value('up{job="postroom"}')).toBe(1);
  }, 240_000);
});
