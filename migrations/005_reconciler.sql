-- Reconciler state: what it has walked, what it found missing, and each run.

-- Correspondence the organisation sent (recorded by postroom's API client on create, or
-- registered by the backend). With the projection, this is the set a re-read can cover:
-- the service's delivery records name no correspondence, so a missed
-- correspondence.created is only recoverable for ids we know from here.
CREATE TABLE sent_correspondence (
  correspondence_id text PRIMARY KEY,
  recorded_at       timestamptz NOT NULL DEFAULT now(),
  source            text NOT NULL DEFAULT 'client'
);

-- Per endpoint and delivery status: how far a complete walk of the delivery list got.
-- The list has no "since" filter and the spec does not say it is ordered, so every run
-- walks it, and records older than watermark minus an overlap are skipped cheaply.
-- resume_cursor lets a run killed half way continue where it stopped.
CREATE TABLE reconcile_watermarks (
  endpoint_id     text NOT NULL,
  delivery_status text NOT NULL,
  watermark       timestamptz,
  resume_cursor   text,
  resume_max_seen timestamptz,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (endpoint_id, delivery_status)
);

-- A dead delivery whose event is not in the inbox.
CREATE TABLE reconcile_gaps (
  gap_id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id          text NOT NULL UNIQUE,
  event_type        text NOT NULL,
  endpoint_id       text NOT NULL,
  delivery_id       text NOT NULL,
  delivery_created_at timestamptz,
  last_error        text NOT NULL DEFAULT '',
  correspondence_id text,
  status            text NOT NULL DEFAULT 'open',
  reason            text,
  first_seen_at     timestamptz NOT NULL DEFAULT now(),
  last_seen_at      timestamptz NOT NULL DEFAULT now(),
  resolved_at       timestamptz,
  CONSTRAINT reconcile_gaps_status_check CHECK (status IN ('open', 'filled', 'ignored'))
);
CREATE INDEX reconcile_gaps_open_idx ON reconcile_gaps (first_seen_at) WHERE status = 'open';
CREATE INDEX reconcile_gaps_status_idx ON reconcile_gaps (status, first_seen_at DESC);

CREATE TABLE reconcile_runs (
  run_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  started_at  timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  outcome     text NOT NULL DEFAULT 'running',
  dry_run     boolean NOT NULL DEFAULT false,
  summary     jsonb,
  error       text,
  CONSTRAINT reconcile_runs_outcome_check CHECK (outcome IN ('running', 'clean', 'gaps_open', 'failed', 'interrupted'))
);
CREATE INDEX reconcile_runs_started_idx ON reconcile_runs (started_at DESC);
