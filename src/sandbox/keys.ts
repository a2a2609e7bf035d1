import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { PostroomError } from '../errors.js';
import { KEY_PREFIXES, PLANES, SCOPES, isScope, type Plane, type Scope } from './catalogue.js';
import { randomToken, type IdFactory } from './ids.js';

/** A key given to the sandbox: without scopes it carries all of them. */
export interface KeySpec {
  key: string;
  scopes?: readonly Scope[];
}

export interface ApiKeyView {
  key_id: string;
  /** The secret redacted to its prefix, as list responses show it. */
  prefix: string;
  plane: Plane;
  scopes: Scope[];
  created_at: string;
  rotated_at: string | null;
  revoked: boolean;
}

export interface Caller {
  keyId: string;
  plane: Plane;
  scopes: ReadonlySet<Scope>;
}

interface KeyRecord {
  keyId: string;
  prefix: string;
  plane: Plane;
  scopes: Set<Scope>;
  createdAt: number;
  rotatedAt: number | undefined;
  revoked: boolean;
}

interface HashEntry {
  record: KeyRecord;
  /** Set on a secret replaced by rotation: it keeps working until then (the grace period). */
  expiresAt: number | undefined;
}

export interface KeyStore {
  add(spec: KeySpec): ApiKeyView;
  /** The caller a presented secret belongs to, or undefined (unknown, revoked, past its grace). */
  authenticate(secret: string): Caller | undefined;
  rotate(keyId: string, graceSeconds: number): { view: ApiKeyView; secret: string; previousExpiresAt: string } | undefined;
  revoke(keyId: string): ApiKeyView | undefined;
  get(keyId: string): ApiKeyView | undefined;
  list(): ApiKeyView[];
}

const KEY_BODY = /^[A-Za-z0-9_-]{1,200}$/;

/**
 * Whether `caller` may list, read, rotate or revoke `target`. The spec: none of the key
 * operations widens access, and the key sent selects the plane. So a key reaches only keys
 * of its own plane whose every scope it holds itself: rotating a wider key would hand the
 * caller a secret with scopes it lacks. `other_plane` is answered 404 (the other plane's
 * keys do not exist for this caller); a missing scope is answered 403 naming it.
 */
export function keyAccess(
  caller: Caller,
  target: ApiKeyView,
): { ok: true } | { ok: false; reason: 'other_plane' } | { ok: false; reason: 'wider'; missingScope: Scope } {
  if (target.plane !== caller.plane) return { ok: false, reason: 'other_plane' };
  const missing = target.scopes.find((s) => !caller.scopes.has(s));
  return missing === undefined ? { ok: true } : { ok: false, reason: 'wider', missingScope: missing };
}

/** Only the SHA-256 of a key is kept: a heap dump or a debug print shows no usable secret. */
export function hashKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function planeOf(secret: string): Plane | undefined {
  return PLANES.find((p) => secret.startsWith(KEY_PREFIXES[p]));
}

export function generateKey(plane: Plane = 'sandbox'): string {
  return `${KEY_PREFIXES[plane]}${randomToken(16)}`;
}

/** Parses `<api-key>[:<scope>,<scope>…]`; `what` names the flag or option in errors. */
export function parseKeySpec(raw: string, what = '--key'): KeySpec {
  const colon = raw.indexOf(':');
  const key = colon === -1 ? raw : raw.slice(0, colon);
  validateKey(key, what);
  if (colon === -1) return { key };
  const scopes = raw
    .slice(colon + 1)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (scopes.length === 0)
    throw new PostroomError(
      'invalid_flag',
      `${what}: no scopes after ":"; omit the colon for a key with every scope, or list scopes from: ${SCOPES.join(', ')}`,
    );
  for (const s of scopes) {
    if (!isScope(s))
      throw new PostroomError('invalid_flag', `${what}: unknown scope "${s.slice(0, 60)}"; accepted scopes: ${SCOPES.join(', ')}`);
  }
  return { key, scopes: scopes as Scope[] };
}

export function validateKey(key: string, what = 'key'): Plane {
  const plane = planeOf(key);
  if (!plane)
    throw new PostroomError(
      'invalid_flag',
      `${what}: an API key starts with ${Object.values(KEY_PREFIXES).join(' or ')} (the prefix selects the plane)`,
    );
  if (!KEY_BODY.test(key.slice(KEY_PREFIXES[plane].length))) {
    throw new PostroomError('invalid_flag', `${what}: after the prefix, a key is 1 to 200 letters, digits, "_" or "-"`);
  }
  return plane;
}

export function createKeyStore(deps: { clock: Clock; ids: IdFactory }): KeyStore {
  const byId = new Map<string, KeyRecord>();
  const byHash = new Map<string, HashEntry>();

  const view = (r: KeyRecord): ApiKeyView => ({
    key_id: r.keyId,
    prefix: r.prefix,
    plane: r.plane,
    scopes: SCOPES.filter((s) => r.scopes.has(s)),
    created_at: new Date(r.createdAt).toISOString(),
    rotated_at: r.rotatedAt === undefined ? null : new Date(r.rotatedAt).toISOString(),
    revoked: r.revoked,
  });
  const displayPrefix = (secret: string, plane: Plane): string => secret.slice(0, KEY_PREFIXES[plane].length + 4);

  return {
    add(spec) {
      const plane = validateKey(spec.key);
      const hash = hashKey(spec.key);
      if (byHash.has(hash)) throw new PostroomError('duplicate_key', 'the same API key was given twice');
      const record: KeyRecord = {
        keyId: deps.ids.next('key'),
        prefix: displayPrefix(spec.key, plane),
        plane,
        scopes: new Set(spec.scopes ?? SCOPES),
        createdAt: deps.clock.now(),
        rotatedAt: undefined,
        revoked: false,
      };
      byId.set(record.keyId, record);
      byHash.set(hash, { record, expiresAt: undefined });
      return view(record);
    },
    authenticate(secret) {
      const entry = byHash.get(hashKey(secret));
      if (!entry || entry.record.revoked) return undefined;
      if (entry.expiresAt !== undefined && deps.clock.now() >= entry.expiresAt) return undefined;
      return { keyId: entry.record.keyId, plane: entry.record.plane, scopes: entry.record.scopes };
    },
    rotate(keyId, graceSeconds) {
      const record = byId.get(keyId);
      if (!record || record.revoked) return undefined;
      const now = deps.clock.now();
      const expiresAt = now + graceSeconds * 1000;
      for (const [hash, entry] of byHash) {
        if (entry.record !== record) continue;
        // A grace period only ever shortens: rotating twice does not revive an older secret.
        if (graceSeconds === 0) byHash.delete(hash);
        else entry.expiresAt = Math.min(entry.expiresAt ?? Infinity, expiresAt);
      }
      const secret = generateKey(record.plane);
      byHash.set(hashKey(secret), { record, expiresAt: undefined });
      record.prefix = displayPrefix(secret, record.plane);
      record.rotatedAt = now;
      return { view: view(record), secret, previousExpiresAt: new Date(expiresAt).toISOString() };
    },
    revoke(keyId) {
      const record = byId.get(keyId);
      if (!record) return undefined;
      record.revoked = true;
      return view(record);
    },
    get(keyId) {
      const r = byId.get(keyId);
      return r ? view(r) : undefined;
    },
    list: () => [...byId.values()].map(view),
  };
}
