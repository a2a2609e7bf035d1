import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Signature vectors computed independently of postroom (HMAC-SHA256 by another implementation), kept in the
 * repository so that a clone tests itself. The file is a byte-for-byte copy of the service's published vectors;
 * test/unit/signature-vectors.test.ts compares the two when the original is beside the checkout.
 */
export const SIGNATURE_VECTORS_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/signature-vectors.json');

export interface SignatureVector {
  name: string;
  scheme: 'body' | 'timestamp.body';
  secrets: string[];
  header: string;
  body_base64: string;
  now: number;
  tolerance_seconds: number;
  expect: 'valid' | 'invalid';
  reason?: string;
  note?: string;
}

export function loadSignatureVectors(): { reasons: string[]; cases: SignatureVector[] } {
  return JSON.parse(fs.readFileSync(SIGNATURE_VECTORS_FILE, 'utf8')) as { reasons: string[]; cases: SignatureVector[] };
}
