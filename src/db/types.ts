export interface QueryResult<R> {
  rows: R[];
  rowCount: number;
}

/** A statement kept prepared per connection where the store allows it (see named() in statement.ts). */
export interface NamedStatement {
  readonly name: string;
  readonly text: string;
}

export type Sql = string | NamedStatement;

/**
 * What a query needs: a pool, a transaction or a single connection all look the same.
 * `sql` is a statement's text or a NamedStatement, written out so that the public API does not name it.
 */
export interface Queryable {
  query<R = Record<string, unknown>>(
    sql: string | { readonly name: string; readonly text: string },
    params?: readonly unknown[],
  ): Promise<QueryResult<R>>;
  /** Several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
  /**
   * `COPY … FROM STDIN` with `data` as its whole input (and any statements after it in `sql`, in the
   * same implicit transaction); resolves with the rows copied. Only where the store speaks the COPY
   * protocol outside a transaction (Postgres through its pool): callers check for it and otherwise insert.
   */
  copyIn?(sql: string, data: Buffer): Promise<number>;
}

/** One connection: queries and transactions on it run in order. */
export interface Session extends Queryable {
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
}

/**
 * The whole storage surface postroom uses. Two implementations: Postgres through
 * pg.Pool (production) and embedded PGlite (zero-set-up development default).
 */
export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /**
   * One statement that must answer within `timeoutMs`: otherwise it rejects with
   * StoreUnavailableError at the deadline and, on Postgres, its connection is
   * destroyed rather than reused, so a stuck connection costs one statement, not
   * every one after it. For paths with a promise to keep (ingress acks, probes, scrapes).
   */
  queryWithin<R = Record<string, unknown>>(
    timeoutMs: number,
    sql: string | { readonly name: string; readonly text: string },
    params?: readonly unknown[],
  ): Promise<QueryResult<R>>;
  /** copyIn under the same deadline as queryWithin; absent where copyIn is. */
  copyInWithin?(timeoutMs: number, sql: string, data: Buffer): Promise<number>;
  /** The schema postroom's tables live in; every connection has it first on its search_path. */
  readonly schema: string;
  /** BEGIN … COMMIT around fn; ROLLBACK when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** Notifications are hints: a listener may miss some (reconnects), so callers also poll. */
  listen(channel: string, onPayload: (payload: string) => void): Promise<() => Promise<void>>;
  notify(channel: string, payload?: string): Promise<void>;
  /**
   * Runs fn while holding a session-level advisory lock on a dedicated connection,
   * which fn receives (a Session, written out as `sql` is): work done through it cannot deadlock against a small pool.
   * With `wait: false`, returns `{ acquired: false }` at once when another holder has it.
   */
  withAdvisoryLock<T>(
    key: string,
    fn: (session: Queryable & Pick<Db, 'transaction'>) => Promise<T>,
    options?: { wait?: boolean },
  ): Promise<{ acquired: true; value: T } | { acquired: false }>;
  close(): Promise<void>;
}
