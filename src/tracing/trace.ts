import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  isSpanContextValid,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
} from '@opentelemetry/api';
import { VERSION } from '../version.js';

/**
 * postroom's spans, through `@opentelemetry/api` only: with no SDK registered (the library's default, and
 * `serve` without OTEL_* settings) every call below is the API's no-op, a span that records nothing. An
 * application that registers an SDK gets postroom's spans in its own traces; `serve` registers one only
 * when the standard OTEL_* variables ask for it (src/app/tracing.ts).
 *
 * Attributes carry ids, types, outcomes and sizes, never a secret, an API key, a header value or a field
 * of a payload (test/tracing/otlp.test.ts checks what an exporter receives).
 */
/** ROOT_CONTEXT is the empty context: a span started in it is the root of a trace of its own. */
export { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, propagation, trace, type Attributes, type Context, type Span };

/** One tracer for the process; the API hands back a proxy that finds the SDK whenever one is registered. */
export const tracer: Tracer = trace.getTracer('postroom', VERSION);

/** Messaging semantic conventions (stable names) that fit postroom's spans. */
export const ATTR = {
  messagingSystem: 'messaging.system',
  operationType: 'messaging.operation.type',
  operationName: 'messaging.operation.name',
  destination: 'messaging.destination.name',
  messageId: 'messaging.message.id',
  bodySize: 'messaging.message.body.size',
  batchCount: 'messaging.batch.message_count',
  eventType: 'postroom.event.type',
  outcome: 'postroom.outcome',
  source: 'postroom.event.source',
  attempt: 'postroom.attempt',
} as const;

export const MESSAGING_SYSTEM = 'postroom';

/**
 * The W3C `traceparent` of a span (`00-<trace id>-<span id>-<flags>`), stored with an event so that its
 * processing joins the trace that delivered it; undefined for the no-op span, which has no valid context.
 */
export function traceparentOf(span: Span): string | undefined {
  const sc = span.spanContext();
  if (!isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags & TraceFlags.SAMPLED ? '01' : '00'}`;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A stored `traceparent` as a remote span context, or undefined for anything that is not one. */
export function spanContextOf(traceparent: string | null | undefined): SpanContext | undefined {
  if (!traceparent) return undefined;
  const m = TRACEPARENT.exec(traceparent);
  if (!m) return undefined;
  const sc: SpanContext = { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16), isRemote: true };
  return isSpanContextValid(sc) ? sc : undefined;
}

/** The context to start a span in whose parent is the stored `traceparent` (the root context when there is none). */
export function contextFromTraceparent(traceparent: string | null | undefined): Context {
  const sc = spanContextOf(traceparent);
  return sc ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}

/** Links to the spans these `traceparent`s name, skipping what is not one. */
export function linksTo(traceparents: Iterable<string | null | undefined>): Link[] {
  const links: Link[] = [];
  for (const tp of traceparents) {
    const sc = spanContextOf(tp);
    if (sc) links.push({ context: sc });
  }
  return links;
}

/** Marks a span failed with the error's class and message (never its details, which may quote a payload). */
export function recordFailure(span: Span, err: unknown): void {
  if (!span.isRecording()) return;
  const name = err instanceof Error ? err.name : 'Error';
  const code = (err as { code?: unknown } | null)?.code;
  span.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === 'string' ? `${name}: ${code}` : name });
  span.setAttribute('error.type', typeof code === 'string' ? code : name);
}

/**
 * Runs `fn` inside a span that is the active one for whatever `fn` starts (its own spans, and calls an
 * SDK's instrumentations trace), ending it when `fn` settles; a throw marks it failed.
 */
export async function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; links?: Link[] },
  parent: Context,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(name, options, parent);
  try {
    return await context.with(trace.setSpan(parent, span), fn, undefined, span);
  } catch (err) {
    recordFailure(span, err);
    throw err;
  } finally {
    span.end();
  }
}
