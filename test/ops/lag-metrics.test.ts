import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import type { RunningServer } from '../../src/app/server.js';
import { instantMs, newInstantFields, readInstant } from '../../src/events/calendar.js';
import { signedAtSeconds, typeGroupOf } from '../../src/metrics/lag.js';
import { availableStoreKinds, openTestStore, type TestStore } from '../support/db.js';
import { makeEvent, postEvent } from '../support/events.js';
import { startServer } from '../../src/app/server.js';
import { createWorkerComponent } from '../../src/app/worker-component.js';
import { loadConfig } from '../../src/config/config.js';
import { silentLogger } from '../../src/logging/logger.js';
import { TEST_SECRET } from '../support/receiver.js';

function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

async function scrape(url: string): Promise<Map<string, number>> {
  const res = await request(`${url}/metrics`);
  return parse(await res.body.text());
}

describe('lag helpers', () => {
  it('reads an envelope instant to the millisecond, offsets and short fractions included', () => {
    const f = newInstantFields();
    for (const at of ['2026-03-01T10:00:00Z', '2026-03-01T10:00:00.5Z', '2026-03-01T10:00:00.123456789+02:00', '0001-01-01T00:00:00Z']) {
      expect(readInstant(at, f)).toBe(true);
      expect(instantMs(f)).toBe(Date.parse(at.replace(/(\.\d{3})\d+/, '$1').replace(/^0001/, '+000001')));
    }
  });

  it('takes the signature timestamp from a stored header, and NaN from anything else', () => {
    expect(signedAtSeconds('t=1700000000,v1=abc')).toBe(1700000000);
    expect(signedAtSeconds('t=1700000000')).toBe(1700000000);
    expect(signedAtSeconds(null)).toBeNaN();
    expect(signedAtSeconds('v1=abc,t=1')).toBeNaN();
    expect(signedAtSeconds('t=x,v1=abc')).toBeNaN();
  });

  it('groups types by what the event type table says they are about', () => {
    expect(typeGroupOf('participant.acted')).toBe('correspondence');
    expect(typeGroupOf('wallet.debited')).toBe('wallet');
    expect(typeGroupOf('webhook.test')).toBe('endpoint');
    expect(typeGroupOf('made.up')).toBe('other');
    expect(typeGroupOf('__proto__')).toBe('other');
  });
});

describe.each(await availableStoreKinds())('event age at acknowledgement and at processing on %s', (kind) => {
  let store: TestStore;
  let server: RunningServer;

  beforeAll(async () => {
    store = await openTestStore(kind);
    const config = loadConfig({ NODE_ENV: 'test', PORT: '0', POSTROOM_WEBHOOK_SECRETS: TEST_SECRET });
    server = await startServer({ config, logger: silentLogger(), db: store.db, components: [(deps) => createWorkerComponent(deps)] });
  });
  afterAll(async () => {
    await server?.close();
    await store?.cleanup();
  });

  it('observes the age since the signature and since `at`, by type group and outcome', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    // Signed 40 s ago, happened 90 s ago: each age falls in a bucket of its own.
    const event = makeEvent({ at: new Date((nowS - 90) * 1000).toISOString() });
    expect((await postEvent(`${server.url}/webhooks`, event, { secret: TEST_SECRET, timestamp: nowS - 40 })).status).toBe(200);
    expect((await postEvent(`${server.url}/webhooks`, event, { secret: TEST_SECRET, timestamp: nowS - 40 })).status).toBe(200);

    let m = await scrape(server.url);
    const ack = (since: string, outcome: string, le: string): number | undefined =>
      m.get(`postroom_event_age_at_ack_seconds_bucket{le="${le}",since="${since}",type_group="correspondence",outcome="${outcome}"}`);
    expect(ack('signed', 'accepted', '30')).toBe(0);
    expect(ack('signed', 'accepted', '60')).toBe(1);
    expect(ack('occurred', 'accepted', '60')).toBe(0);
    expect(ack('occurred', 'accepted', '120')).toBe(1);
    expect(ack('signed', 'duplicate', '60')).toBe(1);

    const processed = (since: string, le: string): number | undefined =>
      m.get(
        `postroom_event_age_at_processing_seconds_bucket{le="${le}",since="${since}",type_group="correspondence",outcome="processed",source="webhook"}`,
      );
    const deadline = Date.now() + 20_000;
    while (processed('signed', '+Inf') === undefined && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      m = await scrape(server.url);
    }
    expect(processed('signed', '30')).toBe(0);
    expect(processed('signed', '60')).toBe(1);
    expect(processed('occurred', '60')).toBe(0);
    expect(processed('occurred', '120')).toBe(1);
    // Bounded labels: no event id, no type name in these series.
    const lagSeries = [...m.keys()].filter((k) => k.startsWith('postroom_event_age_'));
    expect(lagSeries.some((k) => k.includes(event.event_id) || k.includes('participant.acted'))).toBe(false);
  });
});
