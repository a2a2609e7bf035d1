import type { ProjectedCorrespondence, SendSummary } from './read.js';

/** The part of a `GET /correspondence/{id}` response (docs/events.md) the comparison reads. */
export interface ServiceCorrespondence {
  correspondence_id: string;
  status: string;
  kind?: string | null;
  subject?: string | null;
  content_type?: string | null;
  created_at?: string | null;
  document_ids?: readonly string[] | null;
  participants: ReadonlyArray<{ participant_id: string; state: string; ref?: string | null; last_act?: string | null }>;
  send_summary?: SendSummary | null;
}

/**
 * One way the projection differs from the service's answer. A `field` is one of the file's own
 * fields both sides describe, a participant's `field` one of each participant's; each is compared as a value.
 */
export type ProjectionDifference =
  | { kind: 'missing_correspondence'; correspondenceId: string }
  | {
      kind: 'field';
      correspondenceId: string;
      field: 'status' | 'kind' | 'subject' | 'content_type' | 'created_at' | 'document_ids' | 'send_summary';
      projection: unknown;
      service: unknown;
    }
  | { kind: 'missing_participant'; correspondenceId: string; participantId: string; service: string }
  | { kind: 'unexpected_participant'; correspondenceId: string; participantId: string; projection: string }
  | {
      kind: 'participant_field';
      correspondenceId: string;
      participantId: string;
      field: 'ref' | 'state' | 'last_act';
      projection: unknown;
      service: unknown;
    };

type ComparedField = Extract<ProjectionDifference, { kind: 'field' }>['field'];
type ComparedParticipantField = Extract<ProjectionDifference, { kind: 'participant_field' }>['field'];

const instant = (v: string | null | undefined): number | null => (v == null || Number.isNaN(Date.parse(v)) ? null : Date.parse(v));
const sortedSet = (v: readonly string[] | null | undefined): string[] => [...new Set(v ?? [])].sort();

/**
 * What "the projection equals the service" means (docs/events.md): for every
 * field both describe (a field absent from the service's answer is not
 * compared; send_summary absent counts as null), the same value. The file: status, kind, subject,
 * content_type, created_at (the same instant), document_ids (the same set) and
 * send_summary; the same set of participants, each with the same ref, state and
 * last act. Returns the differences (none when equal); the reconciler decides
 * what to do about them.
 */
export function compareWithService(
  projection: ProjectedCorrespondence | undefined,
  service: ServiceCorrespondence,
): ProjectionDifference[] {
  const id = service.correspondence_id;
  if (!projection) return [{ kind: 'missing_correspondence', correspondenceId: id }];
  const out: ProjectionDifference[] = [];
  const field = (name: ComparedField, projected: unknown, theirs: unknown, equal: boolean): void => {
    if (!equal) out.push({ kind: 'field', correspondenceId: id, field: name, projection: projected, service: theirs });
  };
  // A field the service's answer does not carry is not described by both, so it is not compared.
  const has = (name: keyof ServiceCorrespondence): boolean => service[name] !== undefined;
  field('status', projection.status, service.status, projection.status === service.status);
  if (has('kind')) field('kind', projection.kind, service.kind, projection.kind === service.kind);
  if (has('subject')) field('subject', projection.subject, service.subject, projection.subject === service.subject);
  if (has('content_type'))
    field('content_type', projection.content_type, service.content_type, projection.content_type === service.content_type);
  if (has('created_at'))
    field('created_at', projection.created_at, service.created_at, instant(projection.created_at) === instant(service.created_at));
  if (has('document_ids')) {
    const ourDocs = sortedSet(projection.document_ids);
    const theirDocs = sortedSet(service.document_ids);
    field('document_ids', ourDocs, theirDocs, ourDocs.join('\u0000') === theirDocs.join('\u0000'));
  }
  const theirs = service.send_summary ?? null;
  field('send_summary', projection.send_summary, theirs, sameSummary(projection.send_summary, theirs));

  const ours = new Map(projection.participants.map((p) => [p.participant_id, p]));
  for (const p of service.participants) {
    const mine = ours.get(p.participant_id);
    ours.delete(p.participant_id);
    if (mine === undefined) {
      out.push({ kind: 'missing_participant', correspondenceId: id, participantId: p.participant_id, service: p.state });
      continue;
    }
    const part = (name: ComparedParticipantField, projected: unknown, service: unknown): void => {
      if (projected !== service)
        out.push({
          kind: 'participant_field',
          correspondenceId: id,
          participantId: p.participant_id,
          field: name,
          projection: projected,
          service,
        });
    };
    part('state', mine.state, p.state);
    if (p.ref !== undefined) part('ref', mine.ref, p.ref);
    if (p.last_act !== undefined) part('last_act', mine.last_act, p.last_act);
  }
  for (const [participantId, p] of ours)
    out.push({ kind: 'unexpected_participant', correspondenceId: id, participantId, projection: p.state });
  return out;
}

function sameSummary(a: SendSummary | null, b: SendSummary | null): boolean {
  if (a === null || b === null) return a === b;
  return a.delivered === b.delivered && a.held === b.held && a.undeliverable === b.undeliverable && a.total === b.total;
}
