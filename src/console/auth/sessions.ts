import { randomBytes } from 'node:crypto';
import type { Clock } from '../../clock.js';
import type { Identity } from './tokens.js';

/** A logged-in browser: who, its CSRF token, what it may see unmasked, and one message to show after a redirect. */
export interface Session {
  id: string;
  identity: Identity;
  /** The digest of the token it logged in with (token sessions end when that line leaves the file). */
  tokenDigest: Buffer | undefined;
  /** The synchronizer token every form of this session carries. */
  csrf: string;
  lastSeen: number;
  /** Event ids revealed in this session, until when. */
  revealed: Map<string, number>;
  flash: string | undefined;
}

export interface SessionStore {
  create(identity: Identity, tokenDigest: Buffer | undefined): Session;
  /** The live session with this id, its idle time renewed; undefined when unknown or expired. */
  get(id: string | undefined): Session | undefined;
  end(id: string): void;
}

/** Sessions live in this process: the console is served per replica, on its admin listener (docs/console.md). */
const MAX_SESSIONS = 10_000;

export function createSessionStore(options: { idleMs: number; clock: Clock }): SessionStore {
  const sessions = new Map<string, Session>();
  const sweep = (now: number): void => {
    for (const [id, s] of sessions) if (now - s.lastSeen > options.idleMs) sessions.delete(id);
    // Oldest first (a Map keeps insertion order): a flood of logins cannot grow the map without bound.
    while (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value!);
  };
  return {
    create(identity, tokenDigest) {
      const now = options.clock.now();
      sweep(now);
      const session: Session = {
        id: randomBytes(32).toString('base64url'),
        identity,
        tokenDigest,
        csrf: randomBytes(32).toString('base64url'),
        lastSeen: now,
        revealed: new Map(),
        flash: undefined,
      };
      sessions.set(session.id, session);
      return session;
    },
    get(id) {
      if (id === undefined) return undefined;
      const s = sessions.get(id);
      if (!s) return undefined;
      const now = options.clock.now();
      if (now - s.lastSeen > options.idleMs) {
        sessions.delete(id);
        return undefined;
      }
      s.lastSeen = now;
      return s;
    },
    end(id) {
      sessions.delete(id);
    },
  };
}
