import { execFileSync } from 'node:child_process';

/**
 * The Node every measured process runs on: the receivers, `postroom serve` and the CLI, the
 * references beside them, and the workers. Default `node@24`, the line the image ships
 * (deploy/Dockerfile) and a maintained one; the machine's own Node 20 is past its end of
 * life and postroom does not support it. `BENCH_NODE=node@26` (any npx spec) or
 * `BENCH_NODE=current` (the Node running the bench) to choose.
 *
 * It matters: createHmac on Node 24 was measured at 16 µs for a key given as bytes against 3.4 µs on
 * Node 20 (src/signature/sign.ts keeps keys as KeyObjects for that), which a bench on another
 * line would not see.
 */
const resolved = new Map<string, string>();

export function benchNode(spec: string = process.env.BENCH_NODE ?? 'node@24'): string {
  if (spec === 'current') return process.execPath;
  let bin = resolved.get(spec);
  if (bin === undefined) {
    bin = execFileSync('npx', ['-y', spec, '-p', 'process.execPath'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    resolved.set(spec, bin);
  }
  return bin;
}

/** `v24.…` of the Node the measured processes run on, for the results' machine record. */
export function benchNodeVersion(): string {
  return execFileSync(benchNode(), ['-p', 'process.version'], { encoding: 'utf8' }).trim();
}
