-- The completeness watermark, one row per plane and endpoint: the latest instant T such that every delivery the
-- service created for the endpoint before T is in the inbox or is a gap closed with evidence, and no delivery
-- created before T is still pending past the at-risk age. Only a reconcile run writes it, from what it walked,
-- and `run_id` names the run that proved the current value. It never moves back (the writer keeps the greater).
-- Keyed by plane as well: a database may serve endpoints of both planes, and one plane's key proves nothing
-- about the other's deliveries.
CREATE TABLE reconcile_completeness (
  plane            text NOT NULL,
  endpoint_id      text NOT NULL,
  complete_through timestamptz NOT NULL,
  run_id           bigint,
  proved_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (plane, endpoint_id)
);

-- The plane of the key whose walk found the gap, so only evidence read with that plane's key can close it.
-- NULL for gaps recorded before the column existed: those are matched by their endpoint's plane.
ALTER TABLE reconcile_gaps ADD COLUMN plane text;

-- The earliest open gap of one endpoint from the stored watermark on: what pins the watermark.
CREATE INDEX reconcile_gaps_open_endpoint_idx ON reconcile_gaps (endpoint_id, delivery_created_at) WHERE status = 'open';
