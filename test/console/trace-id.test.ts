import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inboxRowFromEnvelope } from '../../src/inbox/envelope-row.js';
import { insertInboxBatch } from '../../src/inbox/insert-queries.js';
import type { TestStore } from '../support/db.js';
import { consoleClient } from './client.js';
import { startConsoleServer, type ConsoleServer } from './server.js';

const VIEWER = 'viewer-token-0123456789abcdefghij';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

describe('the console event view and the trace an event was delivered in', () => {
  let served: ConsoleServer;
  let store: TestStore;
  let admin: string;

  beforeAll(async () => {
    served = await startConsoleServer(`viewer:vera:${VIEWER}\n`);
    ({ store, admin } = served);
    const row = (eventId: string) =>
      inboxRowFromEnvelope(
        {
          event_id: eventId,
          type: 'participant.acted',
          at: '2026-12-05T02:00:00Z',
          data: { correspondence_id: 'cor_1', participant_id: 'p1', act: 'read', ref: 'r' },
        },
        'webhook',
      );
    await insertInboxBatch(store.db, [{ ...row('evt_traced'), traceContext: `00-${TRACE_ID}-00f067aa0ba902b7-01` }, row('evt_untraced')]);
  });

  afterAll(async () => {
    await served?.close();
  });

  it('shows the trace id of an event that has one, and no trace row for one that has none', async () => {
    const c = consoleClient(admin);
    await c.login(VIEWER);
    const traced = await (await c.get('/console/events/evt_traced')).text();
    expect(traced).toContain('trace id');
    expect(traced).toContain(TRACE_ID);
    // The span id of the request is not the trace's: only the trace id is shown.
    expect(traced).not.toContain('00f067aa0ba902b7');
    const untraced = await (await c.get('/console/events/evt_untraced')).text();
    expect(untraced).not.toContain('trace id');
  });
});
