import os from 'node:os';
import { finishAudit, recordAudit, type AuditEntry } from '../console/audit-queries.js';
import type { Identity } from '../console/auth/tokens.js';
import { describeError } from '../errors.js';
import type { CliContext } from './context.js';

/** Who ran the command: the operating-system user and host, as the console's audit shows it. */
function cliIdentity(): Identity {
  let user = 'unknown';
  try {
    user = os.userInfo().username;
  } catch {
    // No passwd entry for the uid (a container started with an arbitrary uid): the host still says where.
  }
  return { name: `${user}@${os.hostname()}`, role: 'operator', via: 'cli' };
}

/**
 * Records an action taken with the CLI in the same audit table as the console's (`postroom console audit`
 * and the console's Audit view show both). The action has already happened when this runs, so a failure
 * to record it is reported on stderr rather than turned into the command's failure. Returns the entry's id.
 */
export async function recordCliAction(ctx: CliContext, entry: AuditEntry): Promise<number | undefined> {
  try {
    return await recordAudit(await ctx.db(), cliIdentity(), entry);
  } catch (err) {
    ctx.io.stderr.write(`warning: the action was done but could not be recorded in the audit table: ${describeError(err)}\n`);
    return undefined;
  }
}

/** How an audited action that ran on (a reconcile run) ended. */
export async function finishCliAction(
  ctx: CliContext,
  auditId: number | undefined,
  affected: number | null,
  detail: Record<string, unknown>,
): Promise<void> {
  if (auditId === undefined) return;
  try {
    await finishAudit(await ctx.db(), auditId, affected, detail);
  } catch (err) {
    ctx.io.stderr.write(`warning: could not record how the action ended in the audit table: ${describeError(err)}\n`);
  }
}
