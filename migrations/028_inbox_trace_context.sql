-- The trace an event was delivered in, so that the worker's span for it, and its handlers' spans, belong to
-- the same trace as the request that brought it (docs/observability.md). Ingress writes the W3C
-- `traceparent` of its request span (`00-<trace id>-<span id>-<flags>`, 55 characters) when tracing is on;
-- otherwise, and for every row written before, it is NULL and the worker starts a trace of its own.
-- A nullable column without a default rewrites nothing.
ALTER TABLE inbox ADD COLUMN trace_context text;
