import { describe, expect, it } from 'vitest';
import { compareWithService, type ServiceCorrespondence } from '../../src/projection/compare.js';
import type { ProjectedCorrespondence } from '../../src/projection/read.js';
import type { Correspondence } from '../../src/client/types.js';

const projected = (over: Partial<ProjectedCorrespondence> = {}): ProjectedCorrespondence => ({
  correspondence_id: 'cor_1',
  status: 'live',
  kind: 'letter',
  subject: 's',
  created_at: null,
  document_ids: [],
  send_summary: { delivered: 1, held: 1, undeliverable: 0, total: 2 },
  participants: [
    { participant_id: 'p1', ref: 'a', state: 'delivered', last_act: 'read', last_act_at: '2026-01-01T00:00:00.000Z' },
    { participant_id: 'p2', ref: 'b', state: 'held', last_act: null, last_act_at: null },
  ],
  last_event: { event_id: 'e', type: 'participant.acted', at: '2026-01-01T00:00:00.000Z' },
  updated_at: '2026-01-01T00:00:00.000Z',
  ...over,
});

/** A GET /correspondence/{id} response as docs/events.md shows it. */
const service = (over: Partial<ServiceCorrespondence> = {}): ServiceCorrespondence => ({
  correspondence_id: 'cor_1',
  status: 'live',
  participants: [
    { participant_id: 'p2', ref: 'b', state: 'held' },
    { participant_id: 'p1', ref: 'a', state: 'delivered' },
  ],
  send_summary: { delivered: 1, held: 1, undeliverable: 0, total: 2 },
  ...over,
});

describe('compareWithService', () => {
  it('finds no difference when status, participant states and send_summary agree (order and last acts do not matter)', () => {
    expect(compareWithService(projected(), service())).toEqual([]);
  });

  it('reports a correspondence the projection has never seen', () => {
    expect(compareWithService(undefined, service())).toEqual([{ kind: 'missing_correspondence', correspondenceId: 'cor_1' }]);
  });

  it('reports each difference with both sides', () => {
    const diffs = compareWithService(
      projected({ status: null, send_summary: null }),
      service({
        status: 'sealed',
        participants: [
          { participant_id: 'p1', state: 'delivered' },
          { participant_id: 'p2', state: 'delivered' },
          { participant_id: 'p3', state: 'pending' },
        ],
      }),
    );
    expect(diffs).toEqual([
      { kind: 'status', correspondenceId: 'cor_1', projection: null, service: 'sealed' },
      { kind: 'participant_state', correspondenceId: 'cor_1', participantId: 'p2', projection: 'held', service: 'delivered' },
      { kind: 'missing_participant', correspondenceId: 'cor_1', participantId: 'p3', service: 'pending' },
      { kind: 'send_summary', correspondenceId: 'cor_1', projection: null, service: { delivered: 1, held: 1, undeliverable: 0, total: 2 } },
    ]);
  });

  it('reports participants only the projection knows, and summaries that differ in one count', () => {
    const diffs = compareWithService(projected(), service({ participants: [{ participant_id: 'p1', state: 'delivered' }], send_summary: { delivered: 2, held: 0, undeliverable: 0, total: 2 } }));
    expect(diffs.map((d) => d.kind)).toEqual(['unexpected_participant', 'send_summary']);
  });

  it('takes the API client\'s GET /correspondence/{id} response as it is', () => {
    const fromClient: Correspondence = {
      correspondence_id: 'cor_1',
      kind: 'letter',
      status: 'live',
      participants: [
        { participant_id: 'p1', ref: 'a', state: 'delivered', last_act: 'read', last_act_at: '2026-01-01T00:00:00.000Z' },
        { participant_id: 'p2', ref: 'b', state: 'held' },
      ],
      send_summary: { delivered: 1, held: 1, undeliverable: 0, total: 2 },
    };
    expect(compareWithService(projected(), fromClient)).toEqual([]);
  });

  it('treats a missing send_summary like null (a queued send not completed yet)', () => {
    const { send_summary: _omit, ...withoutSummary } = service();
    expect(compareWithService(projected({ send_summary: null }), withoutSummary)).toEqual([]);
  });
});
