/**
 * The API client's defaults, defined here once: createApiClient starts from these
 * and the environment (config.ts) shows and overrides them. Kept apart so reading
 * the configuration loads no HTTP client.
 */
export const API_CLIENT_DEFAULTS: {
  readonly connectTimeoutMs: number;
  readonly headersTimeoutMs: number;
  readonly bodyTimeoutMs: number;
  readonly maxAttempts: number;
  readonly deadlineMs: number;
  readonly correspondencePath: string;
} = Object.freeze({
  connectTimeoutMs: 5000,
  headersTimeoutMs: 15_000,
  bodyTimeoutMs: 30_000,
  /** Attempts of one call, retries included. */
  maxAttempts: 5,
  /** The longest one call may take, retries included. */
  deadlineMs: 60_000,
  /** GET /correspondence/{id}: the spec names the scope but not the path (docs/events.md). */
  correspondencePath: '/correspondence/{id}',
});
