-- The inbox: one row per event ever accepted, keyed by the service's event_id.
-- A row is never deleted: the id is what stops a captured body being replayed
-- with a fresh timestamp (the signature does not cover t). Pruning clears
-- payload and raw_body only.
CREATE TABLE inbox (
  event_id          text PRIMARY KEY,
  type              text NOT NULL,
  occurred_at       timestamptz,
  received_at       timestamptz NOT NULL DEFAULT now(),
  payload           jsonb,
  raw_body          bytea,
  signature_header  text,
  headers           jsonb,
  endpoint_id       text,
  source            text NOT NULL DEFAULT 'webhook',
  correspondence_id text,
  secret_index      smallint,
  status            text NOT NULL DEFAULT 'received',
  attempts          integer NOT NULL DEFAULT 0,
  next_attempt_at   timestamptz NOT NULL DEFAULT now(),
  locked_by         text,
  locked_until      timestamptz,
  last_error        text,
  processed_at      timestamptz,
  pruned_at         timestamptz,
  CONSTRAINT inbox_status_check CHECK (status IN ('received', 'processing', 'processed', 'failed', 'dead', 'skipped', 'quarantined')),
  CONSTRAINT inbox_source_check CHECK (source IN ('webhook', 'reconciler', 'replay'))
);

-- Worker claim: runnable rows in due order.
CREATE INDEX inbox_runnable_idx ON inbox (next_attempt_at) WHERE status IN ('received', 'failed');
-- Lease expiry: processing rows whose worker died.
CREATE INDEX inbox_lease_idx ON inbox (locked_until) WHERE status = 'processing';
-- Ordering hold: is there an earlier unfinished event of the same correspondence?
CREATE INDEX inbox_ordering_idx ON inbox (correspondence_id, occurred_at) WHERE status IN ('received', 'processing', 'failed');
-- Backlog age and stats: oldest unfinished event.
CREATE INDEX inbox_unfinished_idx ON inbox (received_at) WHERE status IN ('received', 'processing', 'failed');
-- CLI listings by status and recency (inbox list --status dead, replay --status).
CREATE INDEX inbox_status_received_idx ON inbox (status, received_at DESC);
-- Listings by time and the audit's --since window.
CREATE INDEX inbox_received_idx ON inbox (received_at DESC);
