import { createHash } from 'node:crypto';

/** Stable 64-bit advisory-lock key from a readable name, the same in every replica and version. */
export function advisoryKey(name: string): bigint {
  const digest = createHash('sha256').update(`postroom:${name}`).digest();
  return digest.readBigInt64BE(0);
}
