import { systemClock, type Clock } from '../clock.js';
import type { Db } from '../db/types.js';
import { StoreUnavailableError, describeError } from '../errors.js';
import type { SecretProvider, SecretSet } from './secret-provider.js';
import { silentLogger, type Logger } from '../logging/logger.js';
import type { SecretCipher } from './crypto.js';
import { SECRETS_CHANNEL, loadEndpointSecrets } from './store.js';

export interface EndpointSecretProviderOptions {
  db: Db;
  cipher: SecretCipher;
  /** POSTROOM_WEBHOOK_SECRETS: used for POST /webhooks, and for an endpoint with no stored secret. */
  configured: readonly string[];
  clock?: Clock;
  logger?: Logger;
  /**
   * How long a loaded set is trusted without a notification. Notifications make
   * changes visible at once; this bounds staleness when one is missed (LISTEN reconnect).
   */
  cacheTtlMs?: number;
  /** Bounds memory when requests name many endpoint ids (unknown ids are cached too). */
  maxCachedEndpoints?: number;
}

export interface EndpointSecretProvider extends SecretProvider {
  /** Subscribes to change notifications. Without it the provider still works, on the TTL alone. */
  start(): Promise<void>;
  close(): Promise<void>;
  /** Forget one endpoint's cached secrets (or all): the next request reloads them. */
  invalidate(endpointId?: string): void;
}

interface Candidate {
  secret: string;
  label: string;
  /** ms since epoch; undefined: does not expire. */
  expiresAt: number | undefined;
}

interface CacheEntry {
  candidates: Candidate[];
  loadedAt: number;
}

export const DEFAULT_SECRET_CACHE_TTL_MS = 5000;

/**
 * Secrets per endpoint for ingress, from the encrypted store. Labels name the
 * secret's role (`endpoint:<id>:current`, `endpoint:<id>:previous`), never its
 * value, so the matches metric shows when senders stop using an old secret.
 */
export function createEndpointSecretProvider(options: EndpointSecretProviderOptions): EndpointSecretProvider {
  const { db, cipher } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger();
  const ttl = options.cacheTtlMs ?? DEFAULT_SECRET_CACHE_TTL_MS;
  const maxEntries = options.maxCachedEndpoints ?? 10_000;
  const configured: Candidate[] = options.configured.map((secret, i) => ({ secret, label: `configured:${i}`, expiresAt: undefined }));
  const configuredSet = toSet(configured, 0);

  const cache = new Map<string, CacheEntry>();
  const loading = new Map<string, Promise<CacheEntry>>();
  // Bumped by every invalidation: a load that started before one must not cache what it read.
  let generation = 0;
  let unlisten: (() => Promise<void>) | undefined;

  function toSet(candidates: readonly Candidate[], now: number): SecretSet {
    const live = candidates.filter((c) => c.expiresAt === undefined || c.expiresAt > now);
    return { secrets: live.map((c) => c.secret), labels: live.map((c) => c.label) };
  }

  async function load(endpointId: string): Promise<CacheEntry> {
    const startedGeneration = generation;
    const now = clock.now();
    const rows = await loadEndpointSecrets(db, cipher, endpointId, new Date(now));
    const candidates: Candidate[] =
      rows.length === 0
        ? configured
        : rows.map((r) => ({ secret: r.secret, label: `endpoint:${endpointId}:${r.state}`, expiresAt: r.expiresAt?.getTime() }));
    const entry: CacheEntry = { candidates, loadedAt: now };
    if (startedGeneration === generation) {
      cache.delete(endpointId);
      cache.set(endpointId, entry);
      if (cache.size > maxEntries) cache.delete(cache.keys().next().value as string);
    }
    return entry;
  }

  function loadOnce(endpointId: string): Promise<CacheEntry> {
    const pending = loading.get(endpointId);
    if (pending) return pending;
    const p: Promise<CacheEntry> = load(endpointId).finally(() => {
      if (loading.get(endpointId) === p) loading.delete(endpointId);
    });
    loading.set(endpointId, p);
    return p;
  }

  const invalidate = (endpointId?: string): void => {
    generation++;
    if (endpointId === undefined || endpointId === '') {
      cache.clear();
      loading.clear();
    } else {
      cache.delete(endpointId);
      loading.delete(endpointId);
    }
  };

  return {
    async secretsFor(endpointId) {
      if (endpointId === undefined) return configuredSet;
      const now = clock.now();
      const cached = cache.get(endpointId);
      if (cached && now - cached.loadedAt < ttl) return toSet(cached.candidates, now);
      try {
        return toSet((await loadOnce(endpointId)).candidates, clock.now());
      } catch (err) {
        if (cached) {
          // Better to verify with what we had seconds ago than to refuse every delivery while the store blips.
          logger.warn({ endpoint_id: endpointId, err }, 'could not reload endpoint secrets; using the cached ones');
          return toSet(cached.candidates, clock.now());
        }
        logger.error({ endpoint_id: endpointId, err }, 'could not load endpoint secrets');
        throw new StoreUnavailableError(`could not load the secrets of endpoint ${endpointId}: ${describeError(err)}`, { cause: err });
      }
    },
    invalidate,
    async start() {
      if (unlisten) return;
      unlisten = await db.listen(SECRETS_CHANNEL, (payload) => invalidate(payload));
      // Anything that changed before the subscription took hold is dropped too.
      invalidate();
    },
    async close() {
      const u = unlisten;
      unlisten = undefined;
      await u?.();
      invalidate();
    },
  };
}
