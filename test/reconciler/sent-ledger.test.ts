import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient } from '../../src/client/client.js';
import { rereadCandidates } from '../../src/reconciler/projection-reads.js';
import { sentLedger } from '../../src/reconciler/state-queries.js';
import { startSandbox, type Sandbox } from '../../src/sandbox/index.js';
import { openDefaultTestStore, type TestStore } from '../support/db.js';

describe('the sent ledger', () => {
  let store: TestStore;
  let sandbox: Sandbox;
  beforeAll(async () => {
    store = await openDefaultTestStore();
    sandbox = await startSandbox({ seed: 1 });
  });
  afterAll(async () => {
    await sandbox?.close();
    await store?.cleanup();
  });

  it('records what the client sends, so a re-read covers it even if its events never arrive', async () => {
    const client = createApiClient({ baseUrl: sandbox.url, apiKey: sandbox.apiKey, onCorrespondenceCreated: sentLedger(store.db) });
    const created = await client.correspondence.create({
      kind: 'letter',
      subject: 'Payslip',
      content_type: 'application/pdf',
      document_ids: [],
      recipients: [{ addressing: { type: 'nin', nin: '12345678901' }, display_name: 'A', ref: 'emp-1' }],
    });
    expect(await rereadCandidates(store.db, null)).toContain(created.correspondence_id);
    // Recorded once however often it is reported.
    await sentLedger(store.db)(created);
    const rows = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM sent_correspondence WHERE correspondence_id = $1', [created.correspondence_id]);
    expect(rows.rows[0]!.n).toBe(1);
    await client.close();
  });
});
