/**
 * What tracing costs ingress (`npm run bench -- tracing`, a few minutes): bench/cpu.ts in its A/B mode
 * (CPU_SLICES) on `ingress` with no SDK, with the SDK sampling 1% and 100% of traces (exported over
 * OTLP/HTTP protobuf to a sink in the bench process), and, with BENCH_TRACING_BASE=/path/to/a/build of
 * postroom without the instrumentation, that build first, so every ratio is against it.
 * Knobs: BENCH_TRACING_BASE, BENCH_TRACING_SLICES (default 3), BENCH_TRACING_SECONDS (default 4).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

export interface TracingBenchLine {
  key: string;
  processUsPerEvent: number;
  /** Median of the per-slice ratios of process CPU per event against the first receiver. */
  processRatio: number;
}

export async function benchTracing(): Promise<{ receivers: string[]; lines: TracingBenchLine[] }> {
  const base = process.env.BENCH_TRACING_BASE;
  const receivers = [...(base ? [`ingress@${base}`] : []), 'ingress', 'ingress~trace=0.01', 'ingress~trace=1'];
  const env = {
    ...process.env,
    CPU_RECEIVERS: receivers.join(','),
    CPU_SLICES: process.env.BENCH_TRACING_SLICES ?? '3',
    CPU_SECONDS: process.env.BENCH_TRACING_SECONDS ?? '4',
  };
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(HERE, 'cpu.ts')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d: Buffer) => {
      process.stdout.write(d);
      text += d.toString();
    });
    child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`bench/cpu.ts exited with ${code}`))));
  });
  const lines: TracingBenchLine[] = [];
  for (const m of out.matchAll(/^(\S+)\s+median: .*?process ([\d.]+) µs\/event.*?\| vs \S+: .*?process ([\d.]+)x/gm)) {
    lines.push({ key: m[1]!, processUsPerEvent: Number(m[2]), processRatio: Number(m[3]) });
  }
  return { receivers, lines };
}
