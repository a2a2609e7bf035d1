-- The service's answer to the reconciler's latest re-read of each correspondence, which the console's timeline
-- shows beside the projection. One row per correspondence, replaced by each re-read; only the fields the
-- comparison with the projection reads (src/projection/compare.ts) are kept.
CREATE TABLE correspondence_service_state (
  correspondence_id text PRIMARY KEY,
  read_at           timestamptz NOT NULL,
  -- the reconcile run that read it
  run_id            bigint,
  file              jsonb NOT NULL
);

-- Actions taken with the CLI (replay, gaps ignore, reconcile) are recorded beside the console's.
ALTER TABLE console_audit DROP CONSTRAINT console_audit_via_check;
ALTER TABLE console_audit ADD CONSTRAINT console_audit_via_check CHECK (via IN ('token', 'proxy', 'local', 'cli'));
