import type { Db, Queryable } from '../db/types.js';
import type { SecretCipher } from './crypto.js';

/** Every change to an endpoint's secrets is announced here (payload: the endpoint id) so all ingress replicas reload. */
export const SECRETS_CHANNEL = 'postroom_endpoint_secrets';

export type SecretState = 'current' | 'previous';

export interface EndpointRecord {
  endpoint_id: string;
  url?: string | null | undefined;
  events?: readonly string[] | undefined;
  active?: boolean | undefined;
  plane?: string | null | undefined;
  /** The service's created_at (ISO string). */
  created_at?: string | Date | null | undefined;
}

export interface KnownEndpoint {
  endpoint_id: string;
  url: string | null;
  events: string[];
  active: boolean;
  plane: string | null;
  created_at: Date | null;
  recorded_at: Date;
  updated_at: Date;
  deleted_at: Date | null;
}

export interface StoredSecret {
  secretId: number;
  state: SecretState;
  secret: string;
  createdAt: Date;
  /** Null for the current secret. */
  expiresAt: Date | null;
}

/** What may be shown about a stored secret: everything but the value. */
export interface StoredSecretInfo {
  secret_id: number;
  state: SecretState;
  key_id: string;
  created_at: Date;
  expires_at: Date | null;
}

/**
 * Inserts or refreshes what postroom knows about an endpoint. Fields left
 * undefined keep their stored value. Also takes the row lock that serialises
 * secret changes of one endpoint.
 */
export async function recordEndpoint(q: Queryable, e: EndpointRecord): Promise<void> {
  await q.query(
    `INSERT INTO webhook_endpoints (endpoint_id, url, events, active, plane, created_at)
     VALUES ($1, $2, COALESCE($3::jsonb, '[]'::jsonb), COALESCE($4, true), $5, $6)
     ON CONFLICT (endpoint_id) DO UPDATE SET
       url = COALESCE(EXCLUDED.url, webhook_endpoints.url),
       events = COALESCE($3::jsonb, webhook_endpoints.events),
       active = COALESCE($4, webhook_endpoints.active),
       plane = COALESCE(EXCLUDED.plane, webhook_endpoints.plane),
       created_at = COALESCE(EXCLUDED.created_at, webhook_endpoints.created_at),
       deleted_at = NULL,
       updated_at = now()`,
    [
      e.endpoint_id,
      e.url ?? null,
      e.events === undefined ? null : JSON.stringify(e.events),
      e.active ?? null,
      e.plane ?? null,
      e.created_at === undefined || e.created_at === null ? null : new Date(e.created_at),
    ],
  );
}

export interface SaveSecretInput {
  endpointId: string;
  secret: string;
  /** How long the secrets it replaces (the current one and any older ones) stay accepted, at most. 0: not at all. */
  overlapSeconds: number;
  now: Date;
  /** Endpoint details to record in the same transaction (create), if known. */
  endpoint?: Omit<EndpointRecord, 'endpoint_id'>;
}

/**
 * Makes `secret` the endpoint's current secret in one transaction: the old current
 * one becomes previous for the overlap from `now`, older previous ones expire by
 * then at the latest, expired ones are deleted, and the change is announced on
 * commit (NOTIFY is transactional), so replicas never hear of a secret that was
 * rolled back.
 */
export async function saveEndpointSecret(db: Db, cipher: SecretCipher, input: SaveSecretInput): Promise<{ replaced: number }> {
  const sealed = cipher.encrypt(input.endpointId, input.secret);
  const expiresAt = new Date(input.now.getTime() + input.overlapSeconds * 1000);
  return db.transaction(async (tx) => {
    await recordEndpoint(tx, { endpoint_id: input.endpointId, ...input.endpoint });
    // The overlap bounds every older secret, not only the one being replaced: after a leak,
    // --overlap 0s must stop all of them, and a routine rotation never lengthens an older one's life.
    await tx.query(`UPDATE endpoint_secrets SET expires_at = $2 WHERE endpoint_id = $1 AND state = 'previous' AND expires_at > $2`, [
      input.endpointId,
      expiresAt,
    ]);
    const demoted = await tx.query(
      `UPDATE endpoint_secrets SET state = 'previous', expires_at = $2 WHERE endpoint_id = $1 AND state = 'current'`,
      [input.endpointId, expiresAt],
    );
    await tx.query(
      `INSERT INTO endpoint_secrets (endpoint_id, state, ciphertext, nonce, auth_tag, key_id, version, created_at)
       VALUES ($1, 'current', $2, $3, $4, $5, $6, $7)`,
      [input.endpointId, sealed.ciphertext, sealed.nonce, sealed.tag, sealed.keyId, sealed.version, input.now],
    );
    await tx.query(`DELETE FROM endpoint_secrets WHERE endpoint_id = $1 AND state = 'previous' AND expires_at <= $2`, [
      input.endpointId,
      input.now,
    ]);
    await tx.query('SELECT pg_notify($1, $2)', [SECRETS_CHANNEL, input.endpointId]);
    return { replaced: demoted.rowCount };
  });
}

interface SecretRow {
  secret_id: number | string;
  state: SecretState;
  ciphertext: Uint8Array;
  nonce: Uint8Array;
  auth_tag: Uint8Array;
  key_id: string;
  version: number;
  created_at: Date;
  expires_at: Date | null;
}

/** The secrets an endpoint's deliveries may be signed with at `now`: current first, then previous ones, newest first. */
export async function loadEndpointSecrets(q: Queryable, cipher: SecretCipher, endpointId: string, now: Date): Promise<StoredSecret[]> {
  const res = await q.query<SecretRow>(
    `SELECT secret_id, state, ciphertext, nonce, auth_tag, key_id, version, created_at, expires_at
       FROM endpoint_secrets
      WHERE endpoint_id = $1 AND (state = 'current' OR expires_at > $2)
      ORDER BY (state = 'current') DESC, created_at DESC, secret_id DESC`,
    [endpointId, now],
  );
  return res.rows.map((r) => ({
    secretId: Number(r.secret_id),
    state: r.state,
    secret: cipher.decrypt(endpointId, {
      ciphertext: Buffer.from(r.ciphertext),
      nonce: Buffer.from(r.nonce),
      tag: Buffer.from(r.auth_tag),
      keyId: r.key_id,
      version: Number(r.version),
    }),
    createdAt: new Date(r.created_at),
    expiresAt: r.expires_at === null ? null : new Date(r.expires_at),
  }));
}

/** Stored secrets of an endpoint without their values, expired ones included (for the CLI and on-call). */
export async function describeEndpointSecrets(q: Queryable, endpointId: string): Promise<StoredSecretInfo[]> {
  const res = await q.query<StoredSecretInfo & { secret_id: number | string }>(
    `SELECT secret_id, state, key_id, created_at, expires_at FROM endpoint_secrets
      WHERE endpoint_id = $1 ORDER BY (state = 'current') DESC, created_at DESC, secret_id DESC`,
    [endpointId],
  );
  return res.rows.map((r) => ({ ...r, secret_id: Number(r.secret_id) }));
}

/**
 * The endpoint was deleted at the service: remember that, and let its current
 * secret run out after the overlap like a rotated one (deliveries already in
 * flight still verify).
 */
export async function retireEndpoint(db: Db, input: { endpointId: string; overlapSeconds: number; now: Date }): Promise<void> {
  const expiresAt = new Date(input.now.getTime() + input.overlapSeconds * 1000);
  await db.transaction(async (tx) => {
    await tx.query(`UPDATE webhook_endpoints SET deleted_at = $2, active = false, updated_at = now() WHERE endpoint_id = $1`, [
      input.endpointId,
      input.now,
    ]);
    await tx.query(`UPDATE endpoint_secrets SET state = 'previous', expires_at = $2 WHERE endpoint_id = $1 AND state = 'current'`, [
      input.endpointId,
      expiresAt,
    ]);
    await tx.query('SELECT pg_notify($1, $2)', [SECRETS_CHANNEL, input.endpointId]);
  });
}

/** Updates the recorded url/events of an endpoint postroom already knows (no-op otherwise). */
export async function updateKnownEndpoint(
  q: Queryable,
  endpointId: string,
  patch: { url?: string | undefined; events?: readonly string[] | undefined },
): Promise<boolean> {
  const res = await q.query(
    `UPDATE webhook_endpoints SET url = COALESCE($2, url), events = COALESCE($3::jsonb, events), updated_at = now() WHERE endpoint_id = $1`,
    [endpointId, patch.url ?? null, patch.events === undefined ? null : JSON.stringify(patch.events)],
  );
  return res.rowCount > 0;
}

/** Each endpoint postroom knows, oldest first; the reconciler walks these. */
export async function listKnownEndpoints(q: Queryable, options: { includeDeleted?: boolean } = {}): Promise<KnownEndpoint[]> {
  const res = await q.query<KnownEndpoint>(
    `SELECT endpoint_id, url, events, active, plane, created_at, recorded_at, updated_at, deleted_at
       FROM webhook_endpoints ${options.includeDeleted ? '' : 'WHERE deleted_at IS NULL'}
      ORDER BY recorded_at, endpoint_id`,
  );
  return res.rows.map((r) => ({ ...r, events: Array.isArray(r.events) ? r.events : [] }));
}

/** Deletes expired previous secrets everywhere; ciphertext nobody may use should not linger. */
export async function pruneExpiredSecrets(q: Queryable, now: Date): Promise<number> {
  const res = await q.query(`DELETE FROM endpoint_secrets WHERE state = 'previous' AND expires_at <= $1`, [now]);
  return res.rowCount;
}
