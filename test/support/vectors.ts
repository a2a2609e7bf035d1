import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Fixed vectors from outside the code, in ../shared/vectors beside the checkout. */
export const SHARED_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../shared');

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
  const file = path.join(SHARED_DIR, 'vectors', 'signature-vectors.json');
  return JSON.parse(fs.readFileSync(file, 'utf8')) as { reasons: string[]; cases: SignatureVector[] };
}
