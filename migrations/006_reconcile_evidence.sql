-- Reconciliation that proves what it claims (issue 12).
--
-- A gap leaves `open` only with evidence tied to that gap:
--   recovered     the missed event's effect is reproduced by synthetic events written
--                 from a re-read of the gap's own correspondence, or the event itself
--                 reached the inbox later;
--   state_synced  the gap's correspondence was identified and re-read after the gap was
--                 first seen and the read model caught up, but the event itself cannot be
--                 reproduced (an intermediate act, a claim code);
--   not_consumed  nothing consumes the type (no handler, no forwarder, no projection effect);
--   ignored       by an operator, with a reason.
-- The old `filled` status was set by rules that were not tied to the gap (a re-read of every
-- known correspondence); such gaps are re-opened, to be judged again on the next run.
ALTER TABLE reconcile_gaps DROP CONSTRAINT reconcile_gaps_status_check;
UPDATE reconcile_gaps SET status = 'recovered'
  WHERE status = 'filled' AND reason = 'the event reached the inbox after the gap was found';
UPDATE reconcile_gaps SET status = 'open', resolved_at = NULL,
       reason = 're-opened by the upgrade to evidence-based reconciliation; judged again on the next run'
  WHERE status = 'filled';
ALTER TABLE reconcile_gaps ADD CONSTRAINT reconcile_gaps_status_check
  CHECK (status IN ('open', 'recovered', 'state_synced', 'not_consumed', 'ignored'));
-- The evidence behind a closed gap: which correspondence was re-read when, what differed,
-- which synthetic events were written.
ALTER TABLE reconcile_gaps ADD COLUMN evidence jsonb;

-- content_type as GET /correspondence/{id} returns it.
ALTER TABLE correspondence_projection ADD COLUMN content_type text;

-- Who runs a reconcile, so a second one can say who holds the lock and since when.
ALTER TABLE reconcile_runs ADD COLUMN holder text;

-- How far a complete walk of GET /correspondence?updated_since= got (one row per plane of the key).
CREATE TABLE reconcile_listing_state (
  plane           text PRIMARY KEY,
  watermark       timestamptz,
  -- false once the service answered 404 for the listing: the fallback (known set) is used.
  supported       boolean NOT NULL DEFAULT true,
  updated_at      timestamptz NOT NULL DEFAULT now()
);

-- What a re-read showed that the read model lacked, and the synthetic events written for it:
-- the evidence gaps are matched against. A gap of the same type, of the same correspondence
-- (when its delivery names one), whose delivery time falls in [window_from, window_to],
-- is explained by it. `single` explanations account for one missed event (used_by_gap);
-- others (an intermediate act superseded by a later one) for any number.
CREATE TABLE reconcile_explanations (
  explanation_id     text PRIMARY KEY,
  correspondence_id  text NOT NULL,
  event_type         text NOT NULL,
  participant_id     text,
  window_from        timestamptz NOT NULL,
  window_to          timestamptz NOT NULL,
  -- Where in the window the event most likely was; `exact` when it is the change's own instant
  -- (a creation, an act), so a delivery made at that instant is that very event.
  anchor             timestamptz NOT NULL,
  exact              boolean NOT NULL,
  outcome            text NOT NULL,
  single             boolean NOT NULL,
  synthetic_event_id text,
  detail             text NOT NULL,
  run_id             bigint,
  created_at         timestamptz NOT NULL DEFAULT now(),
  used_by_gap        bigint,
  CONSTRAINT reconcile_explanations_outcome_check CHECK (outcome IN ('recovered', 'state_synced'))
);
CREATE INDEX reconcile_explanations_correspondence_idx ON reconcile_explanations (correspondence_id);

-- Which event types some worker consumes (handlers by type, a catch-all, a forwarder): the
-- reconciler closes a gap as not_consumed only for a type no configuration ever consumed.
-- Keyed by the configuration, so replicas with the same handlers share a row.
CREATE TABLE event_consumers (
  consumer_key text PRIMARY KEY,
  types        text[] NOT NULL,
  every_type   boolean NOT NULL,
  unknown_types boolean NOT NULL,
  first_seen_at timestamptz NOT NULL DEFAULT now(),
  seen_at      timestamptz NOT NULL DEFAULT now()
);
