-- The live end-to-end probe (`postroom probe`, and `serve`'s leader on a schedule): one row per probe of an
-- endpoint. postroom asks the service to send webhook.test to the endpoint, records the event id the service
-- names (when it names one), and waits until that event is verified and stored in the inbox.
--
-- At most one probe in flight per plane and endpoint (the partial unique index), so neither replicas nor a CLI
-- run beside them can pile probes onto the service. The worker gives no handler an event a probe asked for: it
-- looks the event id up here (probe_runs_event_idx).
CREATE TABLE probe_runs (
  probe_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  plane         text NOT NULL,
  endpoint_id   text NOT NULL,
  requested_at  timestamptz NOT NULL DEFAULT now(),
  -- Set once the service answered and named the event; NULL while asking, or when the answer named none.
  event_id      text,
  finished_at   timestamptz,
  -- ok, or the step that failed: api_refused, never_delivered, signature_refused, not_stored.
  outcome       text,
  round_trip_ms integer,
  detail        text,
  CONSTRAINT probe_runs_outcome_check
    CHECK (outcome IS NULL OR outcome IN ('ok', 'api_refused', 'never_delivered', 'signature_refused', 'not_stored'))
);
CREATE UNIQUE INDEX probe_runs_in_flight_idx ON probe_runs (plane, endpoint_id) WHERE finished_at IS NULL;
CREATE INDEX probe_runs_endpoint_idx ON probe_runs (plane, endpoint_id, requested_at DESC);
CREATE INDEX probe_runs_event_idx ON probe_runs (event_id) WHERE event_id IS NOT NULL;
