import { pino, type Logger, type DestinationStream } from 'pino';
import { createRedactor } from './redact.js';

export type { Logger };

/**
 * Paths that may carry credentials. pino applies these to every line, so a handler
 * that logs a request or a config object by mistake still leaks nothing.
 */
export const REDACT_PATHS = [
  'authorization',
  'Authorization',
  '*.authorization',
  '*.Authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers["x-service-signature"]',
  'headers["x-service-signature"]',
  '*.headers["x-service-signature"]',
  'signature',
  '*.signature',
  'signatureHeader',
  '*.signatureHeader',
  'secret',
  '*.secret',
  'secrets',
  '*.secrets',
  'apiKey',
  '*.apiKey',
  'api_key',
  '*.api_key',
  'encryptionKey',
  '*.encryptionKey',
  'forwardSecret',
  '*.forwardSecret',
];

/**
 * Credentials that can end up inside error text (a driver echoing a connection string,
 * a failed request quoting its headers). Path redaction never sees inside a string,
 * so error messages and stacks are scrubbed of these shapes before they are written.
 */
const SECRET_IN_TEXT: Array<[RegExp, string]> = [
  [/\b(whsec_)[A-Za-z0-9+/=_-]+/g, '$1[redacted]'],
  [/\b(svc_(?:live|sandbox)_)[A-Za-z0-9_-]+/g, '$1[redacted]'],
  [/\b(Bearer\s+)[^\s"',;]+/gi, '$1[redacted]'],
  [/\b(v1=)[0-9a-fA-F]{16,}/g, '$1[redacted]'],
  // user:password@ in URLs (postgres://postroom:pw@db/…)
  [/(\/\/[^/\s:@]+:)[^/\s@]+@/g, '$1[redacted]@'],
];

export function scrubSecrets(text: string): string {
  return SECRET_IN_TEXT.reduce((t, [re, replacement]) => t.replace(re, replacement), text);
}

/**
 * Errors are logged as `{ err }` so pino keeps their type, stack, cause and code; this
 * is pino's own serializer with the text scrubbed. A string logged as `err` is scrubbed too.
 */
function serializeError(err: unknown): unknown {
  if (typeof err === 'string') return scrubSecrets(err);
  const out = pino.stdSerializers.err(err as Error) as unknown as Record<string, unknown>;
  if (out === err || typeof out !== 'object' || out === null) return out;
  for (const key of ['message', 'stack'] as const) if (typeof out[key] === 'string') out[key] = scrubSecrets(out[key]);
  return out;
}

export interface LoggerOptions {
  level: string;
  pretty?: boolean;
  /** Where lines go; tests pass a stream to capture and search them. */
  destination?: DestinationStream;
  base?: Record<string, unknown>;
  /**
   * Secret values (API key, signing secrets) removed from every line, however
   * escaped: the paths above catch fields by name, this catches a value that
   * ended up inside a message or an echoed error body.
   */
  secretValues?: ReadonlyArray<string | undefined>;
}

export function createLogger(options: LoggerOptions): Logger {
  const redactor = options.secretValues?.some((v) => v) ? createRedactor(options.secretValues) : undefined;
  const common = {
    level: options.level,
    base: options.base ?? { service: 'postroom' },
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: serializeError },
    timestamp: pino.stdTimeFunctions.isoTime,
    ...(redactor ? { hooks: { streamWrite: (line: string) => redactor.text(line) } } : {}),
  };
  if (options.destination) return pino(common, options.destination);
  if (options.pretty) {
    return pino({
      ...common,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname,service' } },
    });
  }
  return pino(common);
}

/** A logger that drops everything; for library users who pass none and for quiet tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
