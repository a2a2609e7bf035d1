import type { Readable } from 'node:stream';
import { createInterface } from 'node:readline/promises';
import type { ApiClient } from '../client/index.js';
import { PostroomError } from '../errors.js';
import type { SecretStore } from '../secrets/endpoint-setup.js';
import { secretCipherFromConfig } from '../secrets/from-config.js';
import type { CliContext } from './context.js';
import type { Io } from './output.js';

/**
 * Shared by every command that talks to the service: one client per command,
 * the plane always shown (on stderr, so --json output stays clean), and a
 * guard in front of writes on the live plane. The client (undici and every
 * resource) is loaded here, by the commands that call the service, not at the CLI's start.
 */
export async function apiClientFor(ctx: CliContext): Promise<ApiClient> {
  const { createApiClientFromConfig } = await import('../client/from-config.js');
  const client = createApiClientFromConfig(ctx.config(), { logger: ctx.logger() });
  ctx.io.stderr.write(`plane: ${client.plane}\n`);
  return client;
}

/**
 * A write on the live plane acts on real recipients and may debit the wallet:
 * a person at a terminal confirms it, a script must say --yes.
 */
export async function confirmLiveWrite(
  ctx: CliContext,
  client: ApiClient,
  options: { yes?: boolean | undefined; action: string },
): Promise<void> {
  if (client.plane !== 'live' || options.yes) return;
  if (!ctx.io.interactive) {
    throw new PostroomError(
      'confirmation_required',
      `refusing to ${options.action} on the LIVE plane without confirmation: not a terminal, so pass --yes to confirm`,
      {
        details: { exitCode: 1 },
      },
    );
  }
  const input = (ctx.io as Io & { stdin?: Readable }).stdin ?? process.stdin;
  const rl = createInterface({ input, output: ctx.io.stderr, terminal: false });
  try {
    const answer = await rl.question(`This will ${options.action} on the LIVE plane. Type "yes" to continue: `);
    if (!/^y(es)?$/i.test(answer.trim())) throw new PostroomError('not_confirmed', 'not confirmed; nothing was changed');
  } finally {
    rl.close();
  }
}

/**
 * The store a returned secret goes into, checked *before* the service is asked:
 * a secret is shown exactly once, so there must be somewhere to put it.
 * Undefined when the caller asked to see the secret instead and there is no key.
 */
export async function secretStoreFor(
  ctx: CliContext,
  options: { showSecret: boolean | undefined; command: string },
): Promise<SecretStore | undefined> {
  const cipher = secretCipherFromConfig(ctx.config());
  if (!cipher) {
    if (options.showSecret) return undefined;
    throw new PostroomError(
      'secret_store_unavailable',
      `POSTROOM_ENCRYPTION_KEY is not set, so the signing secret the service returns (once) could not be stored. Set it (e.g. \`openssl rand -hex 32\`), ` +
        `or run \`postroom ${options.command} --show-secret\` to print the secret and put it into POSTROOM_WEBHOOK_SECRETS yourself.`,
    );
  }
  const db = await ctx.db();
  const present = await db.query<{ present: boolean }>(`SELECT to_regclass('endpoint_secrets') IS NOT NULL AS present`);
  if (!present.rows[0]?.present) {
    throw new PostroomError(
      'migrations_pending',
      'the endpoint secret table does not exist yet; run `postroom migrate` first (nothing was sent to the service)',
    );
  }
  return { db, cipher };
}

/** For bookkeeping that must not fail a command whose real work is done (e.g. the local endpoint list). */
export async function bestEffort(ctx: CliContext, what: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    ctx.io.stderr.write(`warning: ${what} failed: ${(err as Error).message}\n`);
  }
}
