import v8 from 'node:v8';

/** Where the old generation's growing factor of a serving process comes from. */
export type HeapGrowthSource = 'postroom' | 'command-line' | 'v8';

export interface HeapGrowth {
  source: HeapGrowthSource;
  /** The percent in force when postroom or the command line set it; undefined when V8 chooses. */
  percent: number | undefined;
}

export interface HeapGrowthDeps {
  /** The process's own Node and V8 flags (process.execArgv). */
  execArgv: readonly string[];
  /** V8's flag setter (v8.setFlagsFromString). */
  setFlags: (flags: string) => void;
}

const FLAG = '--heap-growing-percent';

/**
 * Fixes how far V8 lets the old generation grow past what the last mark-compact kept alive before it marks again.
 *
 * V8 picks that factor from how fast it marks against how fast the old generation fills. An ingress keeps a small
 * old generation (about 14 MB) and promotes little into it, so V8 judges marking cheap and picks its smallest
 * factor, 1.1: under load a mark-compact followed nearly every scavenge, and incremental marking, with its write
 * barrier on every store, was running most of the time. With a factor of 2 (100%) ingress spends about a tenth less
 * CPU per event (bench/cpu.ts, with `ingress+--heap-growing-percent=<n>` receivers beside each other), and its peak
 * memory is lower.
 *
 * V8 reads the flag each time it sets the next limit, so setting it once the process runs takes effect at the next
 * collection (test/app/heap-growth.test.ts counts the collections). A `--heap-growing-percent` on the command line
 * wins; 0 leaves the choice to V8.
 */
export function applyHeapGrowth(percent: number, deps: Partial<HeapGrowthDeps> = {}): HeapGrowth {
  const execArgv = (deps.execArgv ?? process.execArgv).map((a) => (a.startsWith('--') ? a.replace(/_/g, '-') : a));
  const at = execArgv.findIndex((a) => a === FLAG || a.startsWith(`${FLAG}=`));
  if (at !== -1) {
    const value = Number(execArgv[at] === FLAG ? execArgv[at + 1] : execArgv[at]!.slice(FLAG.length + 1));
    return { source: 'command-line', percent: Number.isFinite(value) ? value : undefined };
  }
  if (percent === 0) return { source: 'v8', percent: undefined };
  (deps.setFlags ?? v8.setFlagsFromString)(`${FLAG}=${percent}`);
  return { source: 'postroom', percent };
}
