/**
 * The probe's defaults, defined here once: `postroom probe`'s flags and the environment (config.ts) start from
 * these. Kept apart so reading the configuration loads no probe.
 */
export const PROBE_DEFAULTS: {
  readonly timeoutMs: number;
  readonly minIntervalMs: number;
  readonly scheduleMinIntervalMs: number;
  readonly pollMs: number;
} = Object.freeze({
  /** How long a probe waits for its event to be stored before it diagnoses what failed. */
  timeoutMs: 60_000,
  /** No endpoint is probed again sooner than this after its last probe began, by any replica or CLI run. */
  minIntervalMs: 10_000,
  /** The shortest schedule `serve` accepts (POSTROOM_PROBE_INTERVAL_SECONDS). */
  scheduleMinIntervalMs: 60_000,
  /** How often the inbox is looked at while waiting. */
  pollMs: 100,
});

/** How a probe of one endpoint ended: ok, or the step that failed. */
export const PROBE_OUTCOMES = ['ok', 'api_refused', 'never_delivered', 'signature_refused', 'not_stored'] as const;
export type ProbeOutcome = (typeof PROBE_OUTCOMES)[number];
