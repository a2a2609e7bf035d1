import { timingSafeEqual } from 'node:crypto';
import { parseSignatureHeader } from './header.js';
import { computeDigest, type SignedPayloadScheme } from './sign.js';

export type SignatureFailureReason = 'missing_header' | 'malformed_header' | 'timestamp_outside_window' | 'no_matching_signature';

export const SIGNATURE_FAILURE_REASONS: readonly SignatureFailureReason[] = [
  'missing_header',
  'malformed_header',
  'timestamp_outside_window',
  'no_matching_signature',
];

export type VerifyResult =
  | {
      ok: true;
      /** Index into the secrets list that matched; never the secret itself. */
      secretIndex: number;
      timestamp: number;
      /** now - t, in seconds: positive when the sender's clock is behind ours. */
      skewSeconds: number;
    }
  | { ok: false; reason: SignatureFailureReason; skewSeconds?: number };

export interface VerifyOptions {
  header: string | string[] | undefined | null;
  body: Uint8Array;
  secrets: readonly string[];
  /** Unix seconds. */
  now: number;
  toleranceSeconds: number;
  scheme?: SignedPayloadScheme;
}

const HEX_DIGEST = /^[0-9a-f]{64}$/;
const candidate = Buffer.alloc(32);

/**
 * Verifies before anything parses the body. Every configured secret is tried against
 * every v1 entry with constant-time comparison, and the loop never exits early on a
 * match position, so timing reveals neither which secret nor which byte differed.
 */
export function verifySignature(options: VerifyOptions): VerifyResult {
  const parsed = parseSignatureHeader(options.header);
  if (!parsed.ok) return { ok: false, reason: parsed.reason };

  const skewSeconds = options.now - parsed.timestamp;
  if (Math.abs(skewSeconds) > options.toleranceSeconds) {
    return { ok: false, reason: 'timestamp_outside_window', skewSeconds };
  }

  const scheme = options.scheme ?? 'body';
  let matched = -1;
  for (let i = 0; i < options.secrets.length; i++) {
    const secret = options.secrets[i];
    if (secret === undefined) continue;
    const expected = computeDigest(secret, parsed.timestamp, options.body, scheme);
    for (const v of parsed.v1) {
      // The digest is lowercase hex compared exactly; anything else can never match. Decoded into one buffer
      // kept for it (this runs synchronously, so nothing else holds it): a Buffer per entry per request would
      // be a few hundred bytes for the collector.
      if (!HEX_DIGEST.test(v)) continue;
      candidate.write(v, 'hex');
      if (timingSafeEqual(expected, candidate) && matched === -1) matched = i;
    }
  }
  if (matched === -1) return { ok: false, reason: 'no_matching_signature', skewSeconds };
  return { ok: true, secretIndex: matched, timestamp: parsed.timestamp, skewSeconds };
}
