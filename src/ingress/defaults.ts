import type { SignedPayloadScheme } from '../signature/index.js';

/**
 * The ingress defaults, defined here once: createPostroom().router(), the
 * standalone server and the environment (config.ts) all start from these. Kept
 * apart from the factory so reading the configuration loads no HTTP framework.
 */
export const INGRESS_DEFAULTS: {
  readonly maxBatch: number;
  readonly toleranceSeconds: number;
  readonly scheme: SignedPayloadScheme;
  readonly ackTimeoutMs: number;
  readonly maxBodyBytes: number;
  readonly path: string;
} = Object.freeze({
  /** Rows per group-commit flush. */
  maxBatch: 256,
  /** How far a signature's timestamp may be from our clock, either way. */
  toleranceSeconds: 300,
  /** What the signature covers (the service signs `timestamp.body`). */
  scheme: 'body',
  /** The longest a sender waits for an answer before it gets a 503 and retries. */
  ackTimeoutMs: 5000,
  maxBodyBytes: 1024 * 1024,
  /** Where the Node handler answers (the router is mounted wherever its app says). */
  path: '/webhooks',
});
