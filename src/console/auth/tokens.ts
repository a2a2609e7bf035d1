import { createHash, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import { ConfigError } from '../../errors.js';

export const CONSOLE_ROLES = ['viewer', 'operator'] as const;
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];

/** Who is at the console, and how they proved it. */
export interface Identity {
  name: string;
  role: ConsoleRole;
  /** token (a line of the tokens file), proxy (a trusted user header), local (`postroom console`), cli (a CLI command) */
  via: 'token' | 'proxy' | 'local' | 'cli';
}

/** A token as kept in memory: its SHA-256 only, so comparisons run over equal-length digests. */
interface TokenEntry {
  name: string;
  role: ConsoleRole;
  digest: Buffer;
}

/** Tokens shorter than this are refused: a console token must not be guessable. */
export const MIN_TOKEN_LENGTH = 24;
const NAME = /^[A-Za-z0-9._@+-]{1,64}$/;

export const digestOf = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

/** Constant-time equality of two strings (secrets, CSRF tokens): their digests are compared, never the strings. */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digestOf(a), digestOf(b));
}

/**
 * Lines `role:name:token` (role viewer or operator; `#` comments and blank lines ignored). The error names
 * the line, never the token.
 */
export function parseTokens(text: string, source: string): TokenEntry[] {
  const out: TokenEntry[] = [];
  const names = new Set<string>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const first = line.indexOf(':');
    const second = first < 0 ? -1 : line.indexOf(':', first + 1);
    const where = `${source} line ${i + 1}`;
    if (second < 0) throw new ConfigError('POSTROOM_CONSOLE_TOKENS_FILE', `${where}: expected role:name:token`);
    const role = line.slice(0, first);
    const name = line.slice(first + 1, second);
    const token = line.slice(second + 1);
    if (!(CONSOLE_ROLES as readonly string[]).includes(role))
      throw new ConfigError('POSTROOM_CONSOLE_TOKENS_FILE', `${where}: role must be viewer or operator`);
    if (!NAME.test(name)) throw new ConfigError('POSTROOM_CONSOLE_TOKENS_FILE', `${where}: a name is 1-64 letters, digits or . _ @ + -`);
    if (token.length < MIN_TOKEN_LENGTH || /\s/.test(token))
      throw new ConfigError(
        'POSTROOM_CONSOLE_TOKENS_FILE',
        `${where}: a token is at least ${MIN_TOKEN_LENGTH} characters without spaces (make one with \`openssl rand -base64 32\`)`,
      );
    if (names.has(name)) throw new ConfigError('POSTROOM_CONSOLE_TOKENS_FILE', `${where}: the name ${name} appears twice`);
    names.add(name);
    out.push({ name, role: role as ConsoleRole, digest: digestOf(token) });
  });
  return out;
}

export interface TokenBook {
  /** The identity a token belongs to; every entry is compared, whichever matches. */
  verify(token: string): Identity | undefined;
  /** Whether a session made with this identity still stands (its line is still in the file). */
  stillValid(identity: Identity, digest: Buffer): boolean;
}

/** The tokens file, read at start and again whenever it changes (so a removed line logs its sessions out). */
export function createTokenBook(
  file: string | undefined,
  extra: ReadonlyArray<{ name: string; role: ConsoleRole; token: string }> = [],
): TokenBook {
  const fixed: TokenEntry[] = extra.map((e) => ({ name: e.name, role: e.role, digest: digestOf(e.token) }));
  let entries: TokenEntry[] = [];
  let stamp = '';
  const load = (): TokenEntry[] => {
    if (file === undefined) return fixed;
    let stat: fs.Stats;
    try {
      stat = fs.statSync(file);
    } catch (err) {
      throw new ConfigError('POSTROOM_CONSOLE_TOKENS_FILE', `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
    }
    const now = `${stat.mtimeMs}:${stat.size}:${stat.ino}`;
    if (now !== stamp) {
      entries = parseTokens(fs.readFileSync(file, 'utf8'), file);
      stamp = now;
    }
    return [...entries, ...fixed];
  };
  load();
  return {
    verify(token) {
      const given = digestOf(token);
      let found: TokenEntry | undefined;
      for (const e of load()) if (timingSafeEqual(e.digest, given) && !found) found = e;
      return found && { name: found.name, role: found.role, via: fixed.includes(found) ? 'local' : 'token' };
    },
    stillValid(identity, digest) {
      let ok = false;
      for (const e of load()) if (timingSafeEqual(e.digest, digest) && e.name === identity.name && e.role === identity.role) ok = true;
      return ok;
    },
  };
}
