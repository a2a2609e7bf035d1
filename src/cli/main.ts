import { Command, CommanderError } from 'commander';
import { connectionAdvice } from '../db/connection-advice.js';
import { VERSION } from '../version.js';
import type { Env } from '../config/env.js';
import { describeError, isPostroomError } from '../errors.js';
import { createCliContext, type CliContext } from './context.js';
import type { Io } from './output.js';
import { registerDeliveriesCommands } from './commands/deliveries.js';
import { registerEndpointsCommands } from './commands/endpoints.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerInboxCommands } from './commands/inbox.js';
import { registerCorrespondenceCommands } from './commands/correspondence.js';
import { registerProbeCommand } from './commands/probe.js';
import { registerReconcileCommands } from './commands/reconcile.js';
import { registerConsoleCommand } from './commands/console.js';
import { registerMigrateCommand } from './commands/migrate.js';
import { registerRetentionCommands } from './commands/retention.js';
import { registerSendSampleCommand } from './commands/send-sample.js';
import { registerServeCommand } from './commands/serve.js';
import { registerSandboxCommand } from './commands/sandbox.js';

/** Each domain adds its commands here; order is the order in `postroom --help`. */
const REGISTRARS: Array<(program: Command, ctx: CliContext) => void> = [
  registerServeCommand,
  registerDemoCommand,
  registerMigrateCommand,
  registerRetentionCommands,
  registerInboxCommands,
  registerCorrespondenceCommands,
  registerReconcileCommands,
  registerProbeCommand,
  registerConsoleCommand,
  registerEndpointsCommands,
  registerDeliveriesCommands,
  registerSendSampleCommand,
  registerSandboxCommand,
];

export const EXIT = { ok: 0, error: 1, usage: 64 } as const;

const USAGE_HINT = '(run with --help for usage)';

export function buildProgram(ctx: CliContext): Command {
  const program = new Command('postroom')
    .description(
      "Receive, verify, de-duplicate and process the Correspondence Delivery Service's webhook events, and reconcile every one that was missed.",
    )
    .version(VERSION, '-V, --version', 'print the version')
    .showHelpAfterError(USAGE_HINT)
    // Options after a subcommand belong to that subcommand (`sandbox trigger --key …`), not its parent.
    .enablePositionalOptions()
    .configureOutput({
      writeOut: (s) => ctx.io.stdout.write(s),
      writeErr: (s) => ctx.io.stderr.write(s),
    })
    .exitOverride();
  program.addHelpText(
    'after',
    `
Examples:
  $ postroom serve                       receiver + worker on http://127.0.0.1:8080 (embedded store unless DATABASE_URL)
  $ postroom send-sample                 sign and post a sample event to the local receiver
  $ postroom inbox list --status dead    what needs on-call attention
  $ postroom <command> --help            every command explains itself with examples

Settings come from the environment (DATABASE_URL, POSTROOM_*); see README.md.`,
  );
  for (const register of REGISTRARS) register(program, ctx);
  for (const cmd of allCommands(program))
    cmd.exitOverride().configureOutput({ writeOut: (s) => ctx.io.stdout.write(s), writeErr: (s) => ctx.io.stderr.write(s) });
  return program;
}

function allCommands(cmd: Command): Command[] {
  return cmd.commands.flatMap((c) => [c, ...allCommands(c)]);
}

/** Runs the CLI; returns the process exit code. Never prints a stack trace for expected errors. */
export async function main(argv: string[], env: Env, io?: Io): Promise<number> {
  const realIo: Io = io ?? {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    interactive: Boolean(process.stdin.isTTY && process.stdout.isTTY) && env.CI !== 'true',
  };
  if (io === undefined) endQuietlyOnClosedPipe();
  const ctx = createCliContext(env, realIo);
  const program = buildProgram(ctx);
  let code: number = EXIT.ok;
  try {
    await program.parseAsync(argv);
    code = ctx.exitCode ?? EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Help and version exit with 0; usage errors were already printed by commander.
      code = err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    } else if (isPostroomError(err) && err.code === 'invalid_flag') {
      // A bad option value is a usage error, like an unknown option: the message names the accepted values.
      realIo.stderr.write(`postroom: ${err.message}\n${USAGE_HINT}\n`);
      code = EXIT.usage;
    } else if (isPostroomError(err)) {
      realIo.stderr.write(`postroom: ${err.message}\n`);
      code = typeof err.details?.exitCode === 'number' ? err.details.exitCode : EXIT.error;
    } else {
      realIo.stderr.write(`postroom: unexpected error: ${describeError(err)}\n`);
      const advice = connectionAdvice(err, env.DATABASE_URL);
      if (advice) realIo.stderr.write(`postroom: ${advice}\n`);
      if (env.POSTROOM_DEBUG) realIo.stderr.write(`${(err as Error).stack ?? ''}\n`);
      code = EXIT.error;
    }
  } finally {
    await ctx.close().catch(() => undefined);
  }
  if (io === undefined) process.exitCode = code;
  return code;
}

/**
 * `postroom … | head -1`: once the reader has gone, writes fail with EPIPE, which as an
 * unhandled stream error would end the process with a stack trace. Nobody is reading,
 * so the rest of the output is dropped and the command finishes as it would have.
 */
function endQuietlyOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
    });
  }
}
