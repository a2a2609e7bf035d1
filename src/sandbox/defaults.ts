// The dispatcher's defaults, in a module of their own so that `postroom sandbox --help`
// can show them without loading the sandbox.
export const DEFAULT_RETRY_SCHEDULE = [1, 5, 25, 125, 625] as const;
export const DEFAULT_ATTEMPT_TIMEOUT_MS = 10_000;
