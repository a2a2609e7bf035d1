import type { Queryable, QueryResult } from '../db/types.js';
import { HandlerTransactionClosedError } from './errors.js';

export interface HandlerTx {
  /** What the handler sees as ctx.tx. */
  readonly tx: Queryable;
  /**
   * Ends the handler's use of the transaction: keeps its writes, or undoes them.
   * Keeping throws when the handler left the transaction aborted (it caught a
   * database error and carried on); the writes are undone then as well.
   */
  settle(keep: boolean): Promise<void>;
}

const SAVEPOINT = 'postroom_handler';

/**
 * Gives one event's handlers the batch transaction behind a savepoint, opened
 * lazily: a handler that never touches ctx.tx costs no round trip, so a batch
 * of no-op or HTTP-only handlers stays one short transaction. Once settled,
 * ctx.tx refuses further use, so a query the handler forgot to await cannot
 * slip into the next event's savepoint.
 */
export function openHandlerTx(tx: Queryable): HandlerTx {
  let opened: Promise<void> | undefined;
  let closed = false;

  const ready = async (): Promise<void> => {
    if (closed) throw new HandlerTransactionClosedError();
    opened ??= tx.exec(`SAVEPOINT ${SAVEPOINT}`);
    await opened;
    // Checked again: settle() may have run while we waited for the savepoint.
    if (closed) throw new HandlerTransactionClosedError();
  };

  const undo = async (): Promise<void> => {
    await tx.exec(`ROLLBACK TO SAVEPOINT ${SAVEPOINT}`);
    await tx.exec(`RELEASE SAVEPOINT ${SAVEPOINT}`);
  };

  return {
    tx: {
      async query<R>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> {
        await ready();
        return tx.query<R>(sql, params);
      },
      async exec(sql: string): Promise<void> {
        await ready();
        await tx.exec(sql);
      },
    },
    async settle(keep) {
      closed = true;
      if (!opened) return;
      // If SAVEPOINT itself failed, the batch transaction is broken; let that surface.
      await opened;
      if (!keep) {
        await undo();
        return;
      }
      try {
        await tx.exec(`RELEASE SAVEPOINT ${SAVEPOINT}`);
      } catch (err) {
        await undo();
        throw err;
      }
    },
  };
}
