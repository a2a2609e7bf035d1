import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { freePort, spawnCli, waitForHttp } from '../support/process.js';

const pg = await adminUrl();

/**
 * A process keeps every module it loads for good. Each role loads what it runs,
 * and each command what it needs: an ingress replica without the worker, the
 * reconciler, the API client and the sandbox holds less heap under load, and a CLI
 * command starts sooner. The modules a real process resolved are recorded by a module
 * hook of its own.
 */
const RECORDER = `
import fs from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  fs.appendFileSync(process.env.POSTROOM_TEST_MODULE_LOG, r.url + '\\n');
  return r;
}`;

/** Modules that only other roles and commands use. */
const NOT_FOR_INGRESS = [
  /\/node_modules\/undici\//,
  /\/node_modules\/node-cron\//,
  /\/node_modules\/zod\//,
  /\/src\/sandbox\/(sandbox|dispatcher|app|traffic)\.[jt]s$/,
  /\/src\/client\/client\.[jt]s$/,
  /\/src\/worker\//,
  /\/src\/projection\/apply\.[jt]s$/,
  /\/src\/reconciler\/reconcile\.[jt]s$/,
  /\/src\/app\/(worker|reconciler)-component\.[jt]s$/,
];

describe.skipIf(!pg)('modules a role loads', () => {
  let store: TestStore;
  let dir: string;
  beforeAll(async () => {
    store = await openTestStore('postgres');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-modules-'));
    fs.writeFileSync(path.join(dir, 'recorder.mjs'), RECORDER);
    fs.writeFileSync(
      path.join(dir, 'register.mjs'),
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(path.join(dir, 'recorder.mjs')).href)});\n`,
    );
  });
  afterAll(async () => {
    fs.rmSync(dir, { recursive: true, force: true });
    await store?.cleanup();
  });

  async function modulesOf(role: string, env: Record<string, string> = {}): Promise<string[]> {
    const log = path.join(dir, `${role}${Object.keys(env).length ? '-env' : ''}.log`);
    const port = await freePort();
    const proc = spawnCli(
      ['serve', '--role', role],
      {
        DATABASE_URL: store.url!,
        PORT: String(port),
        POSTROOM_WEBHOOK_SECRETS: 'whsec_role_modules_0123456789',
        POSTROOM_TEST_MODULE_LOG: log,
        ...env,
      },
      ['--import', path.join(dir, 'register.mjs')],
    );
    try {
      await waitForHttp(`http://127.0.0.1:${port}/healthz`, proc, 60_000);
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
    return [...new Set(fs.readFileSync(log, 'utf8').split('\n').filter(Boolean))];
  }

  it('serve --role ingress loads neither the worker, the reconciler, the API client, the sandbox nor zod', async () => {
    const loaded = await modulesOf('ingress');
    expect(loaded.some((u) => /\/src\/ingress\/http-handler\.[jt]s$/.test(u))).toBe(true);
    expect(loaded.filter((u) => NOT_FOR_INGRESS.some((re) => re.test(u)))).toEqual([]);
  });

  it('serve --role worker loads the worker (the recorder sees what a role needs)', async () => {
    const loaded = await modulesOf('worker');
    expect(loaded.some((u) => /\/src\/worker\//.test(u))).toBe(true);
    expect(loaded.some((u) => /\/src\/app\/worker-component\.[jt]s$/.test(u))).toBe(true);
    expect(loaded.some((u) => /\/src\/app\/reconciler-component\.[jt]s$/.test(u))).toBe(false);
  });

  // The SDK only when OTEL_* asks for traces; the API (whose spans are no-ops without it) always.
  const SDK = /\/node_modules\/@opentelemetry\/(sdk-trace|exporter-trace-otlp-[a-z]+|context-async-hooks|resources|core)\//;
  it('loads no OpenTelemetry SDK module without OTEL_* settings, and the SDK and its exporter with them', async () => {
    const off = await modulesOf('ingress');
    expect(off.some((u) => /\/node_modules\/@opentelemetry\/api\//.test(u))).toBe(true);
    expect(off.filter((u) => SDK.test(u))).toEqual([]);
    const on = await modulesOf('ingress', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
    expect(on.some((u) => /\/node_modules\/@opentelemetry\/sdk-trace\//.test(u))).toBe(true);
    expect(on.some((u) => /\/node_modules\/@opentelemetry\/exporter-trace-otlp-http\//.test(u))).toBe(true);
    expect(on.some((u) => /\/node_modules\/@opentelemetry\/exporter-trace-otlp-proto\//.test(u))).toBe(false);
  });
});
