/**
 * What to do about an error met while connecting to Postgres, for the person at the
 * terminal; undefined when the error is not one of these. Only the error's code and
 * message are read, and neither holds the password of DATABASE_URL.
 */
export function connectionAdvice(err: unknown): string | undefined {
  const { code, message } = (err ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : '';
  // PgBouncer, in any pool mode, refuses startup parameters it does not know, and postroom's pool sends two
  // (statement_timeout, and options with its schema on the search_path): README, "Connection poolers".
  if (text.startsWith('unsupported startup parameter')) {
    return (
      'A connection pooler answered instead of Postgres and refused the parameters postroom connects with. ' +
      'Point DATABASE_URL at Postgres itself; or, for PgBouncer, use pool_mode = session with ' +
      "ignore_startup_parameters = statement_timeout, options and postroom's schema on the role's search_path " +
      '(README, "Connection poolers"). Transaction mode cannot serve postroom: it needs session-level connections.'
    );
  }
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EHOSTUNREACH') {
    return 'Postgres is not reachable there. Is it running, and do the host and port of DATABASE_URL name it?';
  }
  if (code === '28P01' || code === '28000') return 'Postgres refused the login: check the user and password in DATABASE_URL.';
  if (code === '3D000') return 'That database does not exist: create it (createdb), or name another in DATABASE_URL.';
  return undefined;
}
