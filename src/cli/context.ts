import { loadConfig, type Config } from '../config/config.js';
import type { Env } from '../config/env.js';
import { openDb } from '../db/open.js';
import type { Db } from '../db/types.js';
import { resolveApiKey } from '../client/api-key.js';
import { createLogger, type Logger } from '../logging/logger.js';
import type { Io } from './output.js';

/**
 * What every command gets: parsed config, a logger on stderr, IO, and a lazily
 * opened database (closed by main when the command ends).
 */
export interface CliContext {
  env: Env;
  io: Io;
  config(): Config;
  logger(): Logger;
  db(): Promise<Db>;
  close(): Promise<void>;
  /** A command's own exit code (e.g. reconcile: 2 when gaps remain open); main uses it when set. */
  exitCode: number | undefined;
}

export function createCliContext(env: Env, io: Io, cwd: string = process.cwd()): CliContext {
  let config: Config | undefined;
  let logger: Logger | undefined;
  let db: Promise<Db> | undefined;
  const ctx: CliContext = {
    exitCode: undefined,
    env,
    io,
    config() {
      config ??= loadConfig(env, cwd);
      return config;
    },
    logger() {
      // CLI logs go to stderr so stdout stays for results and --json.
      logger ??= createLogger({
        level: ctx.config().logLevel === 'info' ? 'warn' : ctx.config().logLevel,
        destination: process.stderr as never,
        secretValues: configuredSecretValues(ctx.config()),
      });
      return logger;
    },
    db() {
      db ??= openDb(ctx.config(), ctx.logger(), { poolSize: 2, applicationName: 'postroom-cli' });
      return db;
    },
    async close() {
      if (db) await (await db.catch(() => undefined))?.close();
    },
  };
  return ctx;
}

/** Every secret value the configuration holds, for the logger to remove from any line it writes. */
export function configuredSecretValues(config: Config): string[] {
  const values = [...config.ingress.secrets, config.worker.forwardSecret, config.encryptionKey];
  try {
    if (config.api.apiKey !== undefined || config.api.apiKeyFile !== undefined) values.push(resolveApiKey(config));
  } catch {
    // An unreadable key file is reported by the command that needs the key.
  }
  return values.filter((v): v is string => typeof v === 'string');
}
