import type { ProjectedCorrespondence, SendSummary } from './read.js';

/** The part of a `GET /correspondence/{id}` response (docs/events.md) the comparison reads. */
export interface ServiceCorrespondence {
  correspondence_id: string;
  status: string;
  participants: ReadonlyArray<{ participant_id: string; state: string; ref?: string | null }>;
  send_summary?: SendSummary | null;
}

export type ProjectionDifference =
  | { kind: 'missing_correspondence'; correspondenceId: string }
  | { kind: 'status'; correspondenceId: string; projection: string | null; service: string }
  | { kind: 'missing_participant'; correspondenceId: string; participantId: string; service: string }
  | { kind: 'unexpected_participant'; correspondenceId: string; participantId: string; projection: string }
  | { kind: 'participant_state'; correspondenceId: string; participantId: string; projection: string; service: string }
  | { kind: 'send_summary'; correspondenceId: string; projection: SendSummary | null; service: SendSummary | null };

/**
 * What "the projection equals the service" means in docs/events.md: the same
 * status, the same set of participants with the same state, and the same
 * send_summary. Returns the differences (none when equal); the reconciler
 * decides what to do about them.
 */
export function compareWithService(projection: ProjectedCorrespondence | undefined, service: ServiceCorrespondence): ProjectionDifference[] {
  const id = service.correspondence_id;
  if (!projection) return [{ kind: 'missing_correspondence', correspondenceId: id }];
  const out: ProjectionDifference[] = [];
  if (projection.status !== service.status) out.push({ kind: 'status', correspondenceId: id, projection: projection.status, service: service.status });

  const ours = new Map(projection.participants.map((p) => [p.participant_id, p.state]));
  for (const p of service.participants) {
    const state = ours.get(p.participant_id);
    if (state === undefined) out.push({ kind: 'missing_participant', correspondenceId: id, participantId: p.participant_id, service: p.state });
    else if (state !== p.state) out.push({ kind: 'participant_state', correspondenceId: id, participantId: p.participant_id, projection: state, service: p.state });
    ours.delete(p.participant_id);
  }
  for (const [participantId, state] of ours) out.push({ kind: 'unexpected_participant', correspondenceId: id, participantId, projection: state });

  const theirs = service.send_summary ?? null;
  if (!sameSummary(projection.send_summary, theirs)) out.push({ kind: 'send_summary', correspondenceId: id, projection: projection.send_summary, service: theirs });
  return out;
}

function sameSummary(a: SendSummary | null, b: SendSummary | null): boolean {
  if (a === null || b === null) return a === b;
  return a.delivered === b.delivered && a.held === b.held && a.undeliverable === b.undeliverable && a.total === b.total;
}
