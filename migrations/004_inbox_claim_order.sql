-- Worker claim in occurrence order: the earliest runnable events come first, so
-- the head of every correspondence is always among the candidates and ordering
-- holds cannot starve a claim (see src/worker/claim-queries.ts). Event ids
-- compare bytewise ("C") here and everywhere the worker orders events.
CREATE INDEX inbox_claim_order_idx ON inbox (occurred_at, event_id COLLATE "C") WHERE status IN ('received', 'failed');
