-- The correspondence read model (docs/events.md): what verified events say about
-- each correspondence and its participants. The worker updates it in the same
-- transaction that marks the inbox rows processed, and the reconciler compares
-- it with GET /correspondence/{id}.
--
-- Every fact keeps the event that set it (its `at` and event_id), so the result
-- is a pure function of the set of events applied: order, batching and retries
-- do not change it. Ranked facts (status, state) never move backwards; at equal
-- rank the earliest event wins, which is what in-order application gives.
CREATE TABLE correspondence_projection (
  correspondence_id     text PRIMARY KEY,
  -- created | live | sealed | withdrawn, or a value postroom does not know (rank 0);
  -- NULL until an event states it (e.g. only participant.acted has been seen).
  status                text,
  status_rank           smallint NOT NULL DEFAULT -1,
  status_at             timestamptz,
  status_event_id       text,
  kind                  text,
  subject               text,
  created_at            timestamptz,
  document_ids          text[] NOT NULL DEFAULT '{}',
  -- send_summary: NULL until correspondence.send_completed; the latest one wins.
  summary_delivered     integer,
  summary_held          integer,
  summary_undeliverable integer,
  summary_total         integer,
  summary_at            timestamptz,
  summary_event_id      text,
  -- The latest event (by at, then event_id) applied so far.
  last_event_id         text NOT NULL,
  last_event_type       text NOT NULL,
  last_event_at         timestamptz NOT NULL,
  updated_at            timestamptz NOT NULL DEFAULT now()
);

-- The reconciler walks correspondences that can still change (not sealed or withdrawn).
CREATE INDEX correspondence_projection_open_idx ON correspondence_projection (correspondence_id) WHERE status_rank < 2;

CREATE TABLE participant_projection (
  correspondence_id  text NOT NULL,
  participant_id     text NOT NULL,
  ref                text,
  -- pending 0, held 1, delivered 2, undeliverable 2; unknown values rank 0.
  state              text NOT NULL,
  state_rank         smallint NOT NULL,
  state_at           timestamptz NOT NULL,
  state_event_id     text NOT NULL,
  last_act           text,
  last_act_at        timestamptz,
  last_act_event_id  text,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (correspondence_id, participant_id)
);
