import type http from 'node:http';
import type { Clock } from '../clock.js';
import type { ConsoleConfig } from '../config/config.js';
import { createSessionStore, type Session } from './auth/sessions.js';
import { createTokenBook, digestOf, sameSecret, type ConsoleRole, type Identity } from './auth/tokens.js';
import { parseCookies } from './http.js';
import { BASE } from './urls.js';

const COOKIE = 'postroom_console';

/** Who a request comes from, and the cookies to set on its response. */
export interface Resolved {
  session: Session | undefined;
  cookies: string[];
  /** A trusted proxy is configured, no token login is, and the request did not name a user. */
  proxyMissing: boolean;
  /** The proxy named a user who has no role here. */
  refused: string | undefined;
}

export interface Access {
  resolve(req: http.IncomingMessage): Resolved;
  /**
   * A session for the holder of this token (a new session id every login), or undefined. `localOnly`: only
   * the token `postroom console` made for its run, the one a link may carry (a tokens file's token is typed
   * into the form, so a link cannot log a browser in as someone else).
   */
  login(req: http.IncomingMessage, token: string, options?: { localOnly?: boolean }): { session: Session; cookie: string } | undefined;
  logout(req: http.IncomingMessage, session: Session): string;
  /** The form's CSRF token is the session's own (compared in constant time). */
  csrfOk(session: Session, given: string | null): boolean;
  /** True when only the proxy can log anyone in (no tokens file, no local token). */
  readonly proxyOnly: boolean;
}

/** Printable, bounded: a header value a proxy set, never a way to smuggle markup or control characters. */
const PROXY_USER = /^[\x21-\x7e]{1,128}$/;

export function createAccess(options: { config: ConsoleConfig; clock: Clock; localLogin?: { name: string; token: string } }): Access {
  const { config } = options;
  const local = options.localLogin
    ? [{ name: options.localLogin.name, role: 'operator' as ConsoleRole, token: options.localLogin.token }]
    : [];
  const tokensConfigured = config.tokensFile !== undefined || local.length > 0;
  const book = tokensConfigured ? createTokenBook(config.tokensFile, local) : undefined;
  const sessions = createSessionStore({ idleMs: config.sessionIdleMs, clock: options.clock });

  /** Secure when the browser reached us over TLS: the socket says so, or a proxy we were told to trust does. */
  const secure = (req: http.IncomingMessage): boolean =>
    Boolean((req.socket as { encrypted?: boolean }).encrypted) ||
    (config.trustForwardedProto &&
      String(req.headers['x-forwarded-proto'] ?? '')
        .split(',')[0]!
        .trim() === 'https');

  const cookie = (req: http.IncomingMessage, value: string, maxAge?: number): string =>
    `${COOKIE}=${value}; Path=${BASE}; HttpOnly; SameSite=Strict${secure(req) ? '; Secure' : ''}${maxAge === undefined ? '' : `; Max-Age=${maxAge}`}`;

  const proxyRole = (user: string): ConsoleRole | undefined => {
    const has = (list: readonly string[]): boolean => list.includes('*') || list.includes(user);
    if (has(config.proxyOperators)) return 'operator';
    if (has(config.proxyViewers)) return 'viewer';
    return undefined;
  };

  const stillStands = (s: Session): boolean =>
    s.identity.via === 'proxy' || (s.tokenDigest !== undefined && book !== undefined && book.stillValid(s.identity, s.tokenDigest));

  return {
    proxyOnly: !tokensConfigured,
    resolve(req) {
      const id = parseCookies(req.headers.cookie).get(COOKIE);
      let session = sessions.get(id);
      if (session && !stillStands(session)) {
        sessions.end(session.id);
        session = undefined;
      }
      const header = config.trustedUserHeader;
      const named = header === undefined ? undefined : req.headers[header];
      const user = typeof named === 'string' ? named.trim() : undefined;
      if (header !== undefined && user !== undefined && user !== '') {
        if (!PROXY_USER.test(user))
          return { session: undefined, cookies: [], proxyMissing: false, refused: 'the user name the proxy sent' };
        const role = proxyRole(user);
        if (!role) return { session: undefined, cookies: [], proxyMissing: false, refused: user };
        if (session && session.identity.via === 'proxy' && session.identity.name === user && session.identity.role === role)
          return { session, cookies: [], proxyMissing: false, refused: undefined };
        if (session) sessions.end(session.id);
        const fresh = sessions.create({ name: user, role, via: 'proxy' }, undefined);
        return { session: fresh, cookies: [cookie(req, fresh.id)], proxyMissing: false, refused: undefined };
      }
      // A proxy session holds only while the proxy keeps naming its user.
      if (session?.identity.via === 'proxy') {
        sessions.end(session.id);
        session = undefined;
      }
      return { session, cookies: [], proxyMissing: header !== undefined && !tokensConfigured && !session, refused: undefined };
    },
    login(req, token, loginOptions = {}) {
      if (!book || token.length > 512) return undefined;
      const identity: Identity | undefined = book.verify(token);
      if (!identity || (loginOptions.localOnly && identity.via !== 'local')) return undefined;
      const session = sessions.create(identity, digestOf(token));
      return { session, cookie: cookie(req, session.id) };
    },
    logout(req, session) {
      sessions.end(session.id);
      return cookie(req, '', 0);
    },
    csrfOk(session, given) {
      return given !== null && given.length <= 256 && sameSecret(given, session.csrf);
    },
  };
}
