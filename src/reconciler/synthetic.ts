import { createHash } from 'node:crypto';
import type { Correspondence } from '../client/types.js';
import { inboxRowFromEnvelope } from '../inbox/envelope-row.js';
import type { NewInboxEvent } from '../inbox/types.js';
import type { ProjectedCorrespondence } from '../projection/read.js';

const STATUS_RANK: Record<string, number> = { created: 0, live: 1, sealed: 2, withdrawn: 2 };
const STATE_RANK: Record<string, number> = { pending: 0, held: 1, delivered: 2, undeliverable: 2 };
const rank = (table: Record<string, number>, v: string | null | undefined): number => (v == null ? -1 : (table[v] ?? 0));

/** Same facts, same id: a second run (or a concurrent one) writes nothing new. */
export function syntheticEventId(...parts: string[]): string {
  return `rec_${createHash('sha256').update(parts.join('\u001f')).digest('hex').slice(0, 40)}`;
}

export interface SyntheticEnvelope {
  event_id: string;
  type: string;
  at: string;
  data: Record<string, unknown>;
}

/**
 * The events that bring the projection to what the service says. Each uses the
 * catalogue type a handler already understands: a participant the service shows
 * delivered gets participant.acted; states that have no event of their own
 * (held, undeliverable, a correspondence never seen) come as a correspondence.created
 * snapshot, which the projection applies under its never-backwards rules.
 */
export function diffCorrespondence(service: Correspondence, projected: ProjectedCorrespondence | undefined, observedAt: Date): SyntheticEnvelope[] {
  const id = service.correspondence_id;
  const at = observedAt.toISOString();
  const out: SyntheticEnvelope[] = [];
  const projParticipants = new Map((projected?.participants ?? []).map((p) => [p.participant_id, p]));
  const participants = service.participants ?? [];

  const needsSnapshot =
    !projected ||
    rank(STATUS_RANK, projected.status) < Math.min(1, rank(STATUS_RANK, service.status)) ||
    participants.some((p) => {
      const mine = projParticipants.get(p.participant_id);
      return p.state !== 'delivered' && (!mine || rank(STATE_RANK, mine.state) < rank(STATE_RANK, p.state));
    });
  if (needsSnapshot) {
    const snapshotParticipants = participants.map((p) => ({ participant_id: p.participant_id, ref: p.ref, state: p.state }));
    out.push({
      event_id: syntheticEventId(id, 'snapshot', String(Math.min(1, rank(STATUS_RANK, service.status))), ...snapshotParticipants.map((p) => `${p.participant_id}=${p.state}`)),
      type: 'correspondence.created',
      at: service.created_at ?? at,
      data: {
        correspondence_id: id,
        kind: service.kind,
        subject: service.subject,
        status: rank(STATUS_RANK, service.status) >= 1 ? 'live' : (service.status ?? 'created'),
        participants: snapshotParticipants,
        reconciled: true,
      },
    });
  }

  for (const p of participants) {
    const mine = projParticipants.get(p.participant_id);
    const lastAct = (p as { last_act?: string | null }).last_act ?? null;
    const lastActAt = (p as { last_act_at?: string | null }).last_act_at ?? null;
    const behindOnState = p.state === 'delivered' && (!mine || rank(STATE_RANK, mine.state) < 2);
    const behindOnAct = lastAct !== null && lastActAt !== null && (!mine?.last_act_at || new Date(lastActAt).getTime() > new Date(mine.last_act_at).getTime());
    if (behindOnState || behindOnAct) {
      const act = lastAct ?? 'delivered';
      out.push({
        event_id: syntheticEventId(id, p.participant_id, 'delivered', act, lastActAt ?? ''),
        type: 'participant.acted',
        at: lastActAt ?? at,
        data: { correspondence_id: id, participant_id: p.participant_id, act, ref: p.ref, reconciled: true },
      });
    }
  }

  if (rank(STATUS_RANK, service.status) === 2 && rank(STATUS_RANK, projected?.status) < 2) {
    out.push({
      event_id: syntheticEventId(id, 'status', service.status),
      type: service.status === 'sealed' ? 'correspondence.sealed' : 'correspondence.withdrawn',
      at,
      data: { correspondence_id: id, reconciled: true },
    });
  }

  const s = service.send_summary;
  const mineS = projected?.send_summary;
  if (s && (!mineS || mineS.delivered !== s.delivered || mineS.held !== s.held || mineS.undeliverable !== s.undeliverable || mineS.total !== s.total)) {
    out.push({
      event_id: syntheticEventId(id, 'summary', String(s.delivered), String(s.held), String(s.undeliverable), String(s.total)),
      type: 'correspondence.send_completed',
      at,
      data: { correspondence_id: id, delivered: s.delivered, held: s.held, undeliverable: s.undeliverable, total: s.total, reconciled: true },
    });
  }
  return out;
}

export function toInboxRow(e: SyntheticEnvelope): NewInboxEvent {
  return inboxRowFromEnvelope(e, 'reconciler');
}
