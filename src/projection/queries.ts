import { arrayLiteral } from '../db/array-literal.js';
import { named } from '../db/statement.js';
import type { Queryable } from '../db/types.js';
import type { CorrespondenceFacts, DocumentFacts, ParticipantFacts } from './facts.js';
import { EARLIEST_CREATED, LATEST, LATEST_ACT, RANKED, orderBy, sortsBefore, type SortOrder } from './sort-order.js';

/*
 * The merge rules (sort-order.ts):
 *   ranked facts (status, state): higher rank first; at equal rank the earlier event
 *   latest facts (summary, last act, last event): the later event; a participant's
 *   act shown by a re-read wins a tie of instants (migrations/011)
 * On conflict the incoming fact replaces the stored one only if it sorts
 * strictly first, so a tie changes nothing.
 */

/** Each column takes the incoming fact's value if the incoming fact sorts strictly first, else keeps the stored one. */
function pick(columns: string[], order: SortOrder): string {
  const incomingWins = sortsBefore(order, 'excluded', 'p');
  return columns.map((c) => `${c} = CASE WHEN ${incomingWins} THEN excluded.${c} ELSE p.${c} END`).join(',\n  ');
}

/**
 * Reduces a batch's facts per correspondence (ON CONFLICT may touch a row only
 * once per statement), then merges them with the stored row. Rows go in key
 * order so concurrent workers lock them in the same order.
 */
const UPSERT_CORRESPONDENCE_SQL = named(
  'project_correspondences',
  `
WITH f AS (
  SELECT *
  FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::int2[], $7::text[], $8::text[],
              $9::text[], $10::int4[], $11::int4[], $12::int4[], $13::int4[], $14::text[], $15::timestamptz[])
    AS f(correspondence_id, event_id, type, at, status, status_rank, kind, subject,
         document_id, delivered, held, undeliverable, total, content_type, created_at)
),
given AS (
  -- Documents a created event lists (given at creation).
  SELECT * FROM unnest($16::text[], $17::text[]) AS g(correspondence_id, document_id)
),
latest AS (
  SELECT DISTINCT ON (correspondence_id) correspondence_id, event_id, type, at
  FROM f ORDER BY correspondence_id, ${orderBy(LATEST('at', 'event_id'))}
),
status AS (
  SELECT DISTINCT ON (correspondence_id) correspondence_id, status, status_rank, at, event_id
  FROM f WHERE status IS NOT NULL
  ORDER BY correspondence_id, ${orderBy(RANKED('status_rank', 'at', 'event_id'))}
),
created AS (
  -- The snapshot of the earliest correspondence.created (there is normally one): the only facts that carry
  -- created_at (facts.ts). Within a batch a tie in created_at falls to the event's at and id, which the stored
  -- row does not keep; across batches it keeps the stored one.
  SELECT DISTINCT ON (correspondence_id) correspondence_id, kind, subject, content_type, created_at
  FROM f WHERE created_at IS NOT NULL
  ORDER BY correspondence_id, ${orderBy(EARLIEST_CREATED)}, at, event_id COLLATE "C"
),
summary AS (
  SELECT DISTINCT ON (correspondence_id) correspondence_id, delivered, held, undeliverable, total, at, event_id
  FROM f WHERE total IS NOT NULL
  ORDER BY correspondence_id, ${orderBy(LATEST('at', 'event_id'))}
),
documents AS (
  SELECT correspondence_id, array_agg(DISTINCT document_id ORDER BY document_id) AS ids
  FROM (SELECT correspondence_id, document_id FROM f WHERE document_id IS NOT NULL
        UNION ALL SELECT correspondence_id, document_id FROM given) AS all_documents
  GROUP BY correspondence_id
)
INSERT INTO correspondence_projection AS p (
  correspondence_id, status, status_rank, status_at, status_event_id, kind, subject, content_type, created_at, document_ids,
  summary_delivered, summary_held, summary_undeliverable, summary_total, summary_at, summary_event_id,
  last_event_id, last_event_type, last_event_at)
SELECT l.correspondence_id, s.status, coalesce(s.status_rank, -1), s.at, s.event_id, c.kind, c.subject, c.content_type, c.created_at, coalesce(d.ids, '{}'),
       m.delivered, m.held, m.undeliverable, m.total, m.at, m.event_id,
       l.event_id, l.type, l.at
FROM latest l
LEFT JOIN status s USING (correspondence_id)
LEFT JOIN created c USING (correspondence_id)
LEFT JOIN summary m USING (correspondence_id)
LEFT JOIN documents d USING (correspondence_id)
ORDER BY l.correspondence_id
ON CONFLICT (correspondence_id) DO UPDATE SET
  ${pick(['status', 'status_rank', 'status_at', 'status_event_id'], RANKED('status_rank', 'status_at', 'status_event_id'))},
  ${pick(['kind', 'subject', 'content_type', 'created_at'], EARLIEST_CREATED)},
  document_ids = CASE WHEN cardinality(excluded.document_ids) = 0 THEN p.document_ids
                      ELSE ARRAY(SELECT DISTINCT unnest(p.document_ids || excluded.document_ids) ORDER BY 1) END,
  ${pick(
    ['summary_delivered', 'summary_held', 'summary_undeliverable', 'summary_total', 'summary_at', 'summary_event_id'],
    LATEST('summary_at', 'summary_event_id'),
  )},
  ${pick(['last_event_id', 'last_event_type', 'last_event_at'], LATEST('last_event_at', 'last_event_id'))},
  updated_at = now()`,
);

/** The same for participants: ranked state, latest act, first ref seen. */
const UPSERT_PARTICIPANTS_SQL = named(
  'project_participants',
  `
WITH f AS (
  SELECT *
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int2[], $6::text[], $7::timestamptz[], $8::text[], $9::bool[])
    AS f(correspondence_id, participant_id, ref, state, state_rank, act, at, event_id, reread)
),
state AS (
  SELECT DISTINCT ON (correspondence_id, participant_id) correspondence_id, participant_id, ref, state, state_rank, at, event_id
  FROM f ORDER BY correspondence_id, participant_id, ${orderBy(RANKED('state_rank', 'at', 'event_id'))}
),
act AS (
  SELECT DISTINCT ON (correspondence_id, participant_id) correspondence_id, participant_id, act, at, reread, event_id
  FROM f WHERE act IS NOT NULL
  ORDER BY correspondence_id, participant_id, ${orderBy(LATEST_ACT('at', 'reread', 'event_id'))}
)
INSERT INTO participant_projection AS p (
  correspondence_id, participant_id, ref, state, state_rank, state_at, state_event_id,
  last_act, last_act_at, last_act_reread, last_act_event_id)
SELECT s.correspondence_id, s.participant_id, s.ref, s.state, s.state_rank, s.at, s.event_id,
       a.act, a.at, coalesce(a.reread, false), a.event_id
FROM state s LEFT JOIN act a USING (correspondence_id, participant_id)
ORDER BY s.correspondence_id, s.participant_id
ON CONFLICT (correspondence_id, participant_id) DO UPDATE SET
  ref = coalesce(p.ref, excluded.ref),
  ${pick(['state', 'state_rank', 'state_at', 'state_event_id'], RANKED('state_rank', 'state_at', 'state_event_id'))},
  ${pick(
    ['last_act', 'last_act_at', 'last_act_reread', 'last_act_event_id'],
    LATEST_ACT('last_act_at', 'last_act_reread', 'last_act_event_id'),
  )},
  updated_at = now()`,
);

export async function upsertCorrespondenceFacts(q: Queryable, f: CorrespondenceFacts, documents: DocumentFacts): Promise<void> {
  if (f.correspondenceId.length === 0) return;
  await q.query(
    UPSERT_CORRESPONDENCE_SQL,
    [
      f.correspondenceId,
      f.eventId,
      f.type,
      f.at,
      f.status,
      f.statusRank,
      f.kind,
      f.subject,
      f.documentId,
      f.delivered,
      f.held,
      f.undeliverable,
      f.total,
      f.contentType,
      f.createdAt,
      documents.correspondenceId,
      documents.documentId,
    ].map(arrayLiteral),
  );
}

export async function upsertParticipantFacts(q: Queryable, f: ParticipantFacts): Promise<void> {
  if (f.correspondenceId.length === 0) return;
  await q.query(
    UPSERT_PARTICIPANTS_SQL,
    [f.correspondenceId, f.participantId, f.ref, f.state, f.stateRank, f.act, f.at, f.eventId, f.reread].map(arrayLiteral),
  );
}
