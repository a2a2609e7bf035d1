// The sandbox's defaults that `postroom sandbox --help` shows, in a module of their own so
// the help loads no sandbox.
export const DEFAULT_RETRY_SCHEDULE = [1, 5, 25, 125, 625] as const;
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 10_000;
/** How long a queued (202) send takes to complete. */
export const DEFAULT_QUEUE_DELAY_MS = 250;
