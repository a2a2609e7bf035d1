import type { Clock } from '../clock.js';
import { PostroomError } from '../errors.js';
import { uniform } from './prng.js';

/**
 * Fault injection for the dispatcher. Every decision is `uniform(seed, delivery seq,
 * attempt, purpose)`: the same seed and the same order of deliveries give the same
 * drops, duplicates, delays and hold-backs, however the HTTP exchanges interleave.
 */
export interface FaultConfig {
  /** Share of attempts lost on the way: not sent, counted as a failed attempt, retried. */
  dropRate: number;
  /** Share of successful attempts whose 2xx is treated as lost, so the event is sent again (a true duplicate). */
  duplicateRate: number;
  /** Each attempt waits a uniform 0..maxDelayMs before it is sent. */
  maxDelayMs: number;
  /** Share of deliveries held back `reorderDelayMs` before their first attempt, so later events overtake them. */
  reorderRate: number;
  reorderDelayMs: number;
  /** Share of deliveries whose every attempt fails: they end dead. */
  failShare: number;
  /** While open, every attempt (to one endpoint, or all) fails without being sent. */
  failureWindow: FailureWindow | null;
}

export interface FailureWindow {
  /** Epoch ms. */
  from: number;
  until: number;
  endpointId?: string | undefined;
}

export type AttemptFault = 'failure_window' | 'forced_failure' | 'drop';

export const DEFAULT_FAULTS: FaultConfig = {
  dropRate: 0,
  duplicateRate: 0,
  maxDelayMs: 0,
  reorderRate: 0,
  reorderDelayMs: 250,
  failShare: 0,
  failureWindow: null,
};

const MAX_DELAY_MS = 600_000;

/** Salts that keep each kind of decision independent of the others. */
const Purpose = { Drop: 1, Duplicate: 2, Delay: 3, Reorder: 4, FailShare: 5 } as const;
type Purpose = (typeof Purpose)[keyof typeof Purpose];

export interface Faults {
  readonly seed: number;
  config(): FaultConfig;
  /** Merges, validates, and applies from the next decision on. */
  set(patch: Partial<FaultConfig>): FaultConfig;
  openFailureWindow(durationMs: number, endpointId?: string): FailureWindow;
  closeFailureWindow(): void;
  /** Extra wait before the first attempt: jitter plus any hold-back. */
  firstDelay(seq: number): { delayMs: number; heldBack: boolean };
  /** Extra wait before a retry, on top of the schedule. */
  jitter(seq: number, attempt: number): number;
  /** Why this attempt fails without being sent, if it does. */
  attemptFault(seq: number, attempt: number, endpointId: string): AttemptFault | undefined;
  duplicate(seq: number, attempt: number): boolean;
}

export function validateFaults(patch: Partial<FaultConfig>, what = 'faults'): Partial<FaultConfig> {
  const rate = (name: keyof FaultConfig): void => {
    const v = patch[name];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > 1))
      throw new PostroomError('invalid_faults', `${what}.${name}: expected a number from 0 to 1`);
  };
  const ms = (name: keyof FaultConfig): void => {
    const v = patch[name];
    if (v !== undefined && (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MAX_DELAY_MS))
      throw new PostroomError('invalid_faults', `${what}.${name}: expected milliseconds from 0 to ${MAX_DELAY_MS}`);
  };
  rate('dropRate');
  rate('duplicateRate');
  rate('reorderRate');
  rate('failShare');
  ms('maxDelayMs');
  ms('reorderDelayMs');
  const w = patch.failureWindow;
  if (w !== undefined && w !== null && (!Number.isFinite(w.from) || !Number.isFinite(w.until) || w.until < w.from)) {
    throw new PostroomError('invalid_faults', `${what}.failureWindow: expected { from, until } epoch ms with until >= from`);
  }
  return patch;
}

export function createFaults(deps: { seed: number; clock: Clock; initial?: Partial<FaultConfig> }): Faults {
  let config: FaultConfig = { ...DEFAULT_FAULTS, ...validateFaults(deps.initial ?? {}) };
  const u = (seq: number, attempt: number, purpose: Purpose): number => uniform(deps.seed, seq, attempt, purpose);

  return {
    seed: deps.seed,
    config: () => ({ ...config, failureWindow: config.failureWindow ? { ...config.failureWindow } : null }),
    set(patch) {
      config = { ...config, ...validateFaults(patch) };
      return this.config();
    },
    openFailureWindow(durationMs, endpointId) {
      if (!Number.isFinite(durationMs) || durationMs <= 0 || durationMs > 86_400_000)
        throw new PostroomError('invalid_faults', 'failure window: duration must be from 1 ms to 24 h');
      const from = deps.clock.now();
      const window: FailureWindow = { from, until: from + durationMs, ...(endpointId === undefined ? {} : { endpointId }) };
      config = { ...config, failureWindow: window };
      return { ...window };
    },
    closeFailureWindow() {
      config = { ...config, failureWindow: null };
    },
    firstDelay(seq) {
      const heldBack = config.reorderRate > 0 && u(seq, 0, Purpose.Reorder) < config.reorderRate;
      return { delayMs: this.jitter(seq, 1) + (heldBack ? config.reorderDelayMs : 0), heldBack };
    },
    jitter(seq, attempt) {
      return config.maxDelayMs > 0 ? Math.floor(u(seq, attempt, Purpose.Delay) * config.maxDelayMs) : 0;
    },
    attemptFault(seq, attempt, endpointId) {
      const w = config.failureWindow;
      const now = deps.clock.now();
      if (w && now >= w.from && now < w.until && (w.endpointId === undefined || w.endpointId === endpointId)) return 'failure_window';
      if (config.failShare > 0 && u(seq, 0, Purpose.FailShare) < config.failShare) return 'forced_failure';
      if (config.dropRate > 0 && u(seq, attempt, Purpose.Drop) < config.dropRate) return 'drop';
      return undefined;
    },
    duplicate: (seq, attempt) => config.duplicateRate > 0 && u(seq, attempt, Purpose.Duplicate) < config.duplicateRate,
  };
}
