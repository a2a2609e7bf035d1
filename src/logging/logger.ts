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
    timestamp: pino.stdTimeFunctions.isoTime,
    ...(redactor ? { hooks: { streamWrite: (line: string) => redactor.text(line) } } : {}),
  };
  if (options.destination) return pino(common, options.destination);
  if (options.pretty) {
    return pino({ ...common, transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname,service' } } });
  }
  return pino(common);
}

/** A logger that drops everything; for library users who pass none and for quiet tests. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
