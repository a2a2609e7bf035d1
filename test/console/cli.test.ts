import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordAudit } from '../../src/console/audit-queries.js';
import { runCli } from '../support/cli.js';
import { adminUrl, openTestStore, type TestStore } from '../support/db.js';
import { spawnCli } from '../support/process.js';

const pg = await adminUrl();

describe.skipIf(!pg)('postroom console', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await openTestStore('postgres');
  });
  afterAll(async () => store?.cleanup());

  it('serves the console alone and prints an address that logs its holder in', async () => {
    const proc = spawnCli(['console', '--port', '0'], { DATABASE_URL: store.url! });
    try {
      let address: string | undefined;
      for (let i = 0; i < 200 && !address; i++) {
        address = /http:\/\/127\.0\.0\.1:\d+\/console\/login\?token=[A-Za-z0-9_-]+/.exec(proc.output())?.[0];
        if (!address) await new Promise((r) => setTimeout(r, 100));
      }
      expect(address, proc.output()).toBeDefined();
      const login = await fetch(address!, { redirect: 'manual' });
      expect(login.status).toBe(303);
      const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
      const page = await fetch(address!.replace(/\/login\?.*$/, ''), { headers: { cookie } });
      expect(page.status).toBe(200);
      expect(await page.text()).toMatch(/@local <span class="role role-operator">operator/);
      const wrong = await fetch(address!.replace(/token=.*/, 'token=guess'), { redirect: 'manual' });
      expect(wrong.status).toBe(401);
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
  });

  it('lists what was done in it: `console audit`, as a table and as JSON', async () => {
    await recordAudit(
      store.db,
      { name: 'otto', role: 'operator', via: 'token' },
      { action: 'ignore_gap', target: '42', affected: 1, detail: { reason: 'staging' } },
    );
    const json = await runCli(['console', 'audit', '--json'], { DATABASE_URL: store.url! });
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject([
      { actor: 'otto', role: 'operator', via: 'token', action: 'ignore_gap', target: '42', affected: 1, detail: { reason: 'staging' } },
    ]);
    const table = await runCli(['console', 'audit', '--actor', 'otto'], { DATABASE_URL: store.url! });
    expect(table.stdout).toMatch(/otto \(operator, token\)\s+ignore_gap\s+42\s+1/);
    expect((await runCli(['console', 'audit', '--actor', 'nobody'], { DATABASE_URL: store.url! })).stdout).toBe('(none)\n');
  });
});
