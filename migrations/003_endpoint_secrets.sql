-- Webhook endpoints postroom knows (created or changed through `postroom endpoints`),
-- so the reconciler can iterate them, and their signing secrets, encrypted at rest.

CREATE TABLE webhook_endpoints (
  endpoint_id  text PRIMARY KEY,
  -- Null when postroom stored a secret for an endpoint whose details it has not seen.
  url          text,
  events       jsonb NOT NULL DEFAULT '[]'::jsonb,
  active       boolean NOT NULL DEFAULT true,
  -- sandbox | live: the plane of the key that created it; endpoints of both may share a database.
  plane        text,
  -- The service's created_at when known; recorded_at is when postroom learned of it.
  created_at   timestamptz,
  recorded_at  timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  -- Deleted at the service; kept so a late delivery or a reconcile can still name it.
  deleted_at   timestamptz
);

CREATE INDEX webhook_endpoints_live_idx ON webhook_endpoints (endpoint_id) WHERE deleted_at IS NULL;

-- One row per secret the service ever returned for an endpoint. AES-256-GCM under
-- POSTROOM_ENCRYPTION_KEY with the endpoint id as additional data; key_id is a
-- fingerprint of the key (never the key), version the format.
-- state current: the secret the service signs with now (at most one per endpoint).
-- state previous: replaced by a rotation, still accepted until expires_at (the overlap),
-- so deliveries signed before the rotation and still being retried verify.
CREATE TABLE endpoint_secrets (
  secret_id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id  text NOT NULL,
  state        text NOT NULL,
  ciphertext   bytea NOT NULL,
  nonce        bytea NOT NULL,
  auth_tag     bytea NOT NULL,
  key_id       text NOT NULL,
  version      smallint NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz,
  CONSTRAINT endpoint_secrets_state_check CHECK (state IN ('current', 'previous')),
  CONSTRAINT endpoint_secrets_expiry_check CHECK ((state = 'current') = (expires_at IS NULL))
);

-- Two concurrent rotations cannot both leave a current secret.
CREATE UNIQUE INDEX endpoint_secrets_one_current ON endpoint_secrets (endpoint_id) WHERE state = 'current';
CREATE INDEX endpoint_secrets_endpoint_idx ON endpoint_secrets (endpoint_id, created_at DESC);
