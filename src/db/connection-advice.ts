/**
 * What to do about an error met while connecting to the Postgres that `databaseUrl`
 * names, for the person at the terminal; undefined when the error is not one of these,
 * or is not about that server (a refused connection to another port is some other
 * peer's). Only the error's code, message and address are read, and none holds the
 * password of DATABASE_URL.
 */
export function connectionAdvice(err: unknown, databaseUrl: string | undefined): string | undefined {
  if (!databaseUrl) return undefined;
  let url: URL;
  try {
    url = new URL(databaseUrl);
  } catch {
    return undefined;
  }
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
  if (aboutServer(err, url)) {
    return 'Postgres is not reachable there. Is it running, and do the host and port of DATABASE_URL name it?';
  }
  if (code === '28P01' || code === '28000') return 'Postgres refused the login: check the user and password in DATABASE_URL.';
  if (code === '3D000') return 'That database does not exist: create it (createdb), or name another in DATABASE_URL.';
  return undefined;
}

const UNREACHABLE = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * A network error on the way to the server of `url`: a refused or unroutable connection to its port, or its host
 * name not resolving. Node reports a host with several addresses as an AggregateError of one error per address.
 */
function aboutServer(err: unknown, url: URL): boolean {
  const nested = (err as { errors?: unknown } | null)?.errors;
  if (Array.isArray(nested) && nested.some((e) => aboutServer(e, url))) return true;
  const e = (err ?? {}) as { code?: unknown; port?: unknown; hostname?: unknown };
  if (typeof e.code !== 'string' || !UNREACHABLE.has(e.code)) return false;
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return e.hostname === url.hostname;
  return e.port === Number(url.port || 5432);
}
