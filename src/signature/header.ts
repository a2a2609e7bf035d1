/**
 * Parser for `X-Service-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]`.
 * Strict where ambiguity could be abused (one `t`, integer seconds), lenient where
 * the sender may evolve (unknown schemes are ignored, spaces around items allowed).
 */
export type ParsedSignatureHeader =
  { ok: true; timestamp: number; v1: string[] } | { ok: false; reason: 'missing_header' | 'malformed_header' };

const MAX_HEADER_LENGTH = 8192;
const MAX_ITEMS = 32;
/**
 * What the service sends: one timestamp and one signature, nothing around them. Read with one
 * match, it skips the split, trims and slices below (about half the parser's cost per delivery);
 * anything else, rotation's second v1 included, takes the general path, which reads the same
 * header the same way.
 */
const CANONICAL = /^t=(\d{1,12}),v1=([^,\s]*)$/;

export function parseSignatureHeader(header: string | string[] | undefined | null): ParsedSignatureHeader {
  if (header === undefined || header === null) return { ok: false, reason: 'missing_header' };
  // Several header lines would be joined differently by different proxies: refuse rather than guess.
  const canonical = typeof header === 'string' ? CANONICAL.exec(header) : null;
  if (canonical !== null) return { ok: true, timestamp: Number(canonical[1]), v1: [canonical[2]!] };
  if (Array.isArray(header))
    return header.length === 0 ? { ok: false, reason: 'missing_header' } : { ok: false, reason: 'malformed_header' };
  const trimmed = header.trim();
  if (trimmed === '') return { ok: false, reason: 'missing_header' };
  if (trimmed.length > MAX_HEADER_LENGTH) return { ok: false, reason: 'malformed_header' };

  const items = trimmed.split(',');
  if (items.length > MAX_ITEMS) return { ok: false, reason: 'malformed_header' };
  let timestamp: number | undefined;
  const v1: string[] = [];
  for (const raw of items) {
    const item = raw.trim();
    const eq = item.indexOf('=');
    if (eq <= 0) return { ok: false, reason: 'malformed_header' };
    const key = item.slice(0, eq);
    const value = item.slice(eq + 1);
    if (key === 't') {
      if (timestamp !== undefined) return { ok: false, reason: 'malformed_header' };
      if (!/^\d{1,12}$/.test(value)) return { ok: false, reason: 'malformed_header' };
      timestamp = Number(value);
    } else if (key === 'v1') {
      v1.push(value);
    }
    // Any other scheme (v0, v2…) is ignored so the sender can add schemes without breaking us.
  }
  if (timestamp === undefined || v1.length === 0) return { ok: false, reason: 'malformed_header' };
  return { ok: true, timestamp, v1 };
}
