/**
 * What postroom's spans cost an ingress request when no OpenTelemetry SDK is registered
 * (`npx tsx bench/tracing-noop.ts`): the calls the request path makes on `@opentelemetry/api` (extract the
 * sender's context, start the request's span, read its traceparent for the row, the isRecording() guards,
 * end it), timed in a loop, beside the same loop with the calls left out. The difference is the no-op's
 * price per event; compare it with ingress's process CPU per stored event from `bench/cpu.ts` in the same
 * run (BENCH_INGRESS_US, default the latest figure in docs/benchmarks.md).
 */
import { performance } from 'node:perf_hooks';
import { ROOT_CONTEXT, SpanKind, propagation, traceparentOf, tracer, type Span } from '../src/tracing/trace.js';

const N = Number(process.env.BENCH_TRACING_NOOP_N ?? 2_000_000);
const ROUNDS = Number(process.env.BENCH_TRACING_NOOP_ROUNDS ?? 7);
const INGRESS_US = Number(process.env.BENCH_INGRESS_US ?? 31.8);

const headers: Record<string, string> = {
  'content-type': 'application/json',
  'user-agent': 'CorrespondenceService-Webhooks/1.0',
  'x-service-event-id': 'evt_01HZX3K9Q7',
  'x-service-event-type': 'participant.acted',
  'x-service-signature': 't=1764979200,v1=5f1d2c0a9b8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6b5a4938271605f4e',
};

let sink = 0;

function withSpans(): void {
  for (let i = 0; i < N; i++) {
    const parent = propagation.extract(ROOT_CONTEXT, headers);
    const span: Span = tracer.startSpan('POST /webhooks', { kind: SpanKind.SERVER }, parent);
    if (span.isRecording()) sink++;
    if (span.isRecording()) sink++;
    const traceContext = traceparentOf(span);
    if (traceContext !== undefined) sink++;
    if (span.isRecording()) sink++;
    if (span.isRecording()) sink++;
    span.end();
    sink += headers['x-service-event-id']!.length;
  }
}

function without(): void {
  for (let i = 0; i < N; i++) sink += headers['x-service-event-id']!.length;
}

const time = (fn: () => void): number => {
  const t0 = performance.now();
  fn();
  return ((performance.now() - t0) * 1e6) / N;
};

// Warm both loops up before counting, so the compiler has done its work.
time(withSpans);
time(without);
const diffs: number[] = [];
for (let r = 0; r < ROUNDS; r++) diffs.push(time(withSpans) - time(without));
diffs.sort((a, b) => a - b);
const ns = diffs[Math.floor(diffs.length / 2)]!;
console.log(
  `no-SDK span calls per request: ${ns.toFixed(1)} ns (median of ${ROUNDS} rounds of ${N.toLocaleString('en')}; spread ${diffs[0]!.toFixed(1)}–${diffs.at(-1)!.toFixed(1)} ns)`,
);
console.log(`against ingress's ${INGRESS_US} µs of process CPU per stored event: ${((ns / 1000 / INGRESS_US) * 100).toFixed(2)}%`);
if (sink === -1) console.log(sink);
