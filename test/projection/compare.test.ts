import { describe, expect, it } from 'vitest';
import { compareWithService, type ServiceCorrespondence } from '../../src/projection/compare.js';
import type { ProjectedCorrespondence } from '../../src/projection/read.js';
import type { Correspondence } from '../../src/client/types.js';

const projected = (over: Partial<ProjectedCorrespondence> = {}): ProjectedCorrespondence => ({
  correspondence_id: 'cor_1',
  status: 'live',
  kind: 'letter',
  subject: 's',
  content_type: 'text/plain',
  created_at: '2026-01-01T00:00:00.000Z',
  document_ids: ['doc_a', 'doc_b'],
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
  kind: 'letter',
  subject: 's',
  content_type: 'text/plain',
  created_at: '2026-01-01T00:00:00Z',
  document_ids: ['doc_b', 'doc_a'],
  participants: [
    { participant_id: 'p2', ref: 'b', state: 'held', last_act: null },
    { participant_id: 'p1', ref: 'a', state: 'delivered', last_act: 'read' },
  ],
  send_summary: { delivered: 1, held: 1, undeliverable: 0, total: 2 },
  ...over,
});

describe('compareWithService', () => {
  it('finds no difference when every field both describe agrees (participant and document order do not matter, nor how an instant is written)', () => {
    expect(compareWithService(projected(), service())).toEqual([]);
  });

  it('reports a correspondence the projection has never seen', () => {
    expect(compareWithService(undefined, service())).toEqual([{ kind: 'missing_correspondence', correspondenceId: 'cor_1' }]);
  });

  it('compares every field of the file: status, kind, subject, content_type, created_at, document_ids, send_summary', () => {
    const diffs = compareWithService(
      projected({
        status: null,
        kind: null,
        subject: null,
        content_type: null,
        created_at: '2026-01-01T00:00:00.001Z',
        document_ids: ['doc_a'],
        send_summary: null,
      }),
      service({ status: 'sealed' }),
    );
    expect(diffs.map((d) => (d.kind === 'field' ? d.field : d.kind))).toEqual([
      'status',
      'kind',
      'subject',
      'content_type',
      'created_at',
      'document_ids',
      'send_summary',
    ]);
    expect(diffs[4]).toEqual({
      kind: 'field',
      correspondenceId: 'cor_1',
      field: 'created_at',
      projection: '2026-01-01T00:00:00.001Z',
      service: '2026-01-01T00:00:00Z',
    });
  });

  it('compares every participant: missing, unexpected, and each of ref, state and last act', () => {
    const diffs = compareWithService(
      projected({
        participants: [
          { participant_id: 'p1', ref: null, state: 'delivered', last_act: 'delivered', last_act_at: '2026-01-01T00:00:00.000Z' },
          { participant_id: 'p2', ref: 'b', state: 'pending', last_act: null, last_act_at: null },
          { participant_id: 'p9', ref: 'z', state: 'pending', last_act: null, last_act_at: null },
        ],
      }),
      service({
        participants: [
          { participant_id: 'p1', ref: 'a', state: 'delivered', last_act: 'approved' },
          { participant_id: 'p2', ref: 'b', state: 'held', last_act: null },
          { participant_id: 'p3', ref: 'c', state: 'pending', last_act: null },
        ],
      }),
    );
    expect(diffs).toEqual([
      { kind: 'participant_field', correspondenceId: 'cor_1', participantId: 'p1', field: 'ref', projection: null, service: 'a' },
      {
        kind: 'participant_field',
        correspondenceId: 'cor_1',
        participantId: 'p1',
        field: 'last_act',
        projection: 'delivered',
        service: 'approved',
      },
      { kind: 'participant_field', correspondenceId: 'cor_1', participantId: 'p2', field: 'state', projection: 'pending', service: 'held' },
      { kind: 'missing_participant', correspondenceId: 'cor_1', participantId: 'p3', service: 'pending' },
      { kind: 'unexpected_participant', correspondenceId: 'cor_1', participantId: 'p9', projection: 'pending' },
    ]);
  });

  it("accepts the API client's Correspondence as it is", () => {
    const fromClient: Correspondence = {
      ...(service() as Correspondence),
      send_summary: { delivered: 1, held: 1, undeliverable: 0, total: 2 },
    };
    expect(compareWithService(projected(), fromClient)).toEqual([]);
  });

  it('treats a missing send_summary on both sides as equal, and one side only as a difference', () => {
    expect(compareWithService(projected({ send_summary: null }), service({ send_summary: null }))).toEqual([]);
    expect(compareWithService(projected({ send_summary: null }), service()).map((d) => d.kind === 'field' && d.field)).toEqual([
      'send_summary',
    ]);
  });
});
