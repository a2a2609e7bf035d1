-- Issue 16: the usual delivery headers in two narrow columns, not a jsonb per row.
--
-- Ingress keeps four headers of a delivery for on-call (src/ingress/accept.ts):
-- content-type, user-agent, X-Service-Event-Id and X-Service-Event-Type. The
-- last two are checked against the signed body before the row is written, so
-- when both were sent they are the row's own event_id and type. Kept as jsonb,
-- those four cost about 170 bytes of every row and its WAL, which measured as
-- 8% of Postgres's time per event at ingest (docs/benchmarks.md, stop 30).
--
-- Such a row now keeps only the two values that say something, here, with
-- headers NULL (a header that was not sent is NULL here; one of the two at
-- least was sent); readers build the same object from them and the row
-- (src/inbox/read-queries.ts). Any other set of headers is kept in headers as
-- before. Adding nullable columns rewrites nothing: existing rows keep their
-- headers as they are.
ALTER TABLE inbox
  ADD COLUMN delivery_content_type text,
  ADD COLUMN delivery_user_agent text;
