/**
 * A process that applies a heap growing percent (argv[2]; "off" applies none) the way `serve` does, then keeps a
 * steady old generation and promotes into it, and prints how many mark-compacts V8 ran (test/app/heap-growth.test.ts).
 */
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { applyHeapGrowth } from '../../src/app/heap-growth.js';

const arg = process.argv[2] ?? 'off';
const applied = arg === 'off' ? undefined : applyHeapGrowth(Number(arg));

let majors = 0;
const observer = new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if ((e as unknown as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
  }
});
observer.observe({ entryTypes: ['gc'] });

// About 16 MB that stays alive, as an ingress's loaded modules and connections do.
const live: number[][] = [];
for (let i = 0; i < 20_000; i++) live.push(Array.from({ length: 100 }, (_, j) => i + j));
// A ring of recent objects: each lives through several scavenges and is promoted, then dies in the old generation.
const ring: Array<{ id: string; data: number[] }> = new Array(400_000);
for (let i = 0; i < 6_000_000; i++) ring[i % ring.length] = { id: `event-${i}`, data: [i, i + 1, i + 2, i + 3] };
// The observer is told after the collections: give it a turn.
setTimeout(() => {
  observer.disconnect();
  process.stdout.write(`${JSON.stringify({ majors, applied, live: live.length })}\n`);
}, 50);
