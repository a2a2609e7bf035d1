import { ConfigError } from '../errors.js';
import type { Env } from './env.js';
import { int, str } from './parse.js';

/**
 * The standard OpenTelemetry variables `serve` reads to decide whether to trace and where to export
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/). They are read here,
 * with every other setting, from the environment `env.ts` hands over, and passed to the SDK as explicit
 * options (src/app/tracing.ts): the SDK's own constructors are given every value they would otherwise look
 * up themselves.
 */
export interface TracingConfig {
  /** Tracing is on only when asked for: an OTLP endpoint, or OTEL_TRACES_EXPORTER=otlp; never with OTEL_SDK_DISABLED=true. */
  enabled: boolean;
  protocol: 'http/protobuf' | 'http/json';
  /** Where spans go: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as given, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces. */
  url: string;
  /** OTEL_EXPORTER_OTLP_(TRACES_)HEADERS: often a vendor's API key, so never logged. */
  headers: Record<string, string>;
  timeoutMs: number;
  serviceName: string;
  /** OTEL_RESOURCE_ATTRIBUTES, with service.name from OTEL_SERVICE_NAME over it. */
  resourceAttributes: Record<string, string>;
  sampler: TracesSampler;
  /** OTEL_TRACES_SAMPLER_ARG: the ratio of the traceidratio samplers, 0 to 1. */
  samplerRatio: number;
  batch: { scheduleDelayMs: number; maxQueueSize: number; maxExportBatchSize: number; exportTimeoutMs: number };
}

export const TRACES_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;
export type TracesSampler = (typeof TRACES_SAMPLERS)[number];

const PROTOCOLS = ['http/protobuf', 'http/json'] as const;
const DEFAULT_ENDPOINT = 'http://localhost:4318';

/** `k1=v1,k2=v2`, values percent-encoded (the W3C baggage format the OTel variables use). */
function keyValues(env: Env, name: string): Record<string, string> {
  const out: Record<string, string> = {};
  const raw = str(env, name);
  if (raw === undefined) return out;
  for (const item of raw.split(',')) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new ConfigError(name, 'expected key=value pairs separated by commas');
    try {
      out[decodeURIComponent(item.slice(0, eq).trim())] = decodeURIComponent(item.slice(eq + 1).trim());
    } catch {
      throw new ConfigError(name, 'a key or value is not valid percent-encoding');
    }
  }
  return out;
}

function endpointUrl(env: Env): { url: string; asked: boolean } {
  const check = (name: string, raw: string): string => {
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw new ConfigError(name, 'expected an absolute http:// or https:// URL');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new ConfigError(name, 'expected an http:// or https:// URL');
    return raw;
  };
  const traces = str(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  if (traces !== undefined) return { url: check('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces), asked: true };
  const base = str(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (base !== undefined) return { url: `${check('OTEL_EXPORTER_OTLP_ENDPOINT', base).replace(/\/+$/, '')}/v1/traces`, asked: true };
  return { url: `${DEFAULT_ENDPOINT}/v1/traces`, asked: false };
}

function protocolOf(env: Env): TracingConfig['protocol'] {
  const name =
    str(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const raw = str(env, name) ?? 'http/protobuf';
  if (!(PROTOCOLS as readonly string[]).includes(raw)) {
    throw new ConfigError(
      name,
      `postroom exports over ${PROTOCOLS.join(' or ')}; got "${raw.slice(0, 40)}" (for gRPC, run a collector that receives OTLP/HTTP)`,
    );
  }
  return raw as TracingConfig['protocol'];
}

function samplerOf(env: Env): { sampler: TracesSampler; ratio: number } {
  const raw = str(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  if (!(TRACES_SAMPLERS as readonly string[]).includes(raw)) {
    throw new ConfigError('OTEL_TRACES_SAMPLER', `expected one of ${TRACES_SAMPLERS.join(' | ')}, got "${raw.slice(0, 40)}"`);
  }
  const arg = str(env, 'OTEL_TRACES_SAMPLER_ARG');
  const ratio = arg === undefined ? 1 : Number(arg);
  if (!(ratio >= 0 && ratio <= 1))
    throw new ConfigError('OTEL_TRACES_SAMPLER_ARG', `expected a ratio from 0 to 1, got "${arg?.slice(0, 40)}"`);
  return { sampler: raw as TracesSampler, ratio };
}

export function loadTracingConfig(env: Env): TracingConfig {
  const exporter = str(env, 'OTEL_TRACES_EXPORTER');
  if (exporter !== undefined && exporter !== 'otlp' && exporter !== 'none') {
    throw new ConfigError('OTEL_TRACES_EXPORTER', `postroom exports traces with otlp (or none); got "${exporter.slice(0, 40)}"`);
  }
  const disabled = str(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true';
  const endpoint = endpointUrl(env);
  const enabled = !disabled && exporter !== 'none' && (exporter === 'otlp' || endpoint.asked);
  const { sampler, ratio } = samplerOf(env);
  const serviceName = str(env, 'OTEL_SERVICE_NAME') ?? 'postroom';
  const timeoutMs = int(
    env,
    'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
    int(env, 'OTEL_EXPORTER_OTLP_TIMEOUT', 10_000, { min: 1, max: 600_000 }),
    {
      min: 1,
      max: 600_000,
    },
  );
  const maxQueueSize = int(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048, { min: 1, max: 1_000_000 });
  return {
    enabled,
    protocol: protocolOf(env),
    url: endpoint.url,
    headers: { ...keyValues(env, 'OTEL_EXPORTER_OTLP_HEADERS'), ...keyValues(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS') },
    timeoutMs,
    serviceName,
    resourceAttributes: { ...keyValues(env, 'OTEL_RESOURCE_ATTRIBUTES'), 'service.name': serviceName },
    sampler,
    samplerRatio: ratio,
    batch: {
      scheduleDelayMs: int(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000, { min: 1, max: 600_000 }),
      maxQueueSize,
      maxExportBatchSize: Math.min(maxQueueSize, int(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512, { min: 1, max: 1_000_000 })),
      exportTimeoutMs: int(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30_000, { min: 1, max: 600_000 }),
    },
  };
}
