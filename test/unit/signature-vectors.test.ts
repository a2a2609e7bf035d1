import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SIGNATURE_FAILURE_REASONS, sign, verifySignature } from '../../src/signature/index.js';
import { loadSignatureVectors, SIGNATURE_VECTORS_FILE } from '../support/vectors.js';

const vectors = loadSignatureVectors();

/** The original of the copy, when the service's shared folder sits beside the checkout. */
const ORIGINAL_SIGNATURE_VECTORS_FILE = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../../shared/vectors/signature-vectors.json',
);

describe('the copy of the signature vectors in test/fixtures', () => {
  it('is byte-identical to ../shared/vectors/signature-vectors.json, when that folder is beside the checkout', (ctx) => {
    if (!fs.existsSync(ORIGINAL_SIGNATURE_VECTORS_FILE)) {
      ctx.skip(`skipped: no ${ORIGINAL_SIGNATURE_VECTORS_FILE} beside this checkout (a clone has none); the copy is used as it is`);
    }
    expect(fs.readFileSync(SIGNATURE_VECTORS_FILE).equals(fs.readFileSync(ORIGINAL_SIGNATURE_VECTORS_FILE))).toBe(true);
  });
});

describe('signature vectors (test/fixtures/signature-vectors.json, computed independently of postroom)', () => {
  it('has cases and the same failure codes as ours', () => {
    expect(vectors.cases.length).toBeGreaterThan(20);
    expect([...vectors.reasons].sort()).toEqual([...SIGNATURE_FAILURE_REASONS].sort());
  });

  for (const c of vectors.cases) {
    it(c.name, () => {
      const result = verifySignature({
        header: c.header,
        body: Buffer.from(c.body_base64, 'base64'),
        secrets: c.secrets,
        now: c.now,
        toleranceSeconds: c.tolerance_seconds,
        scheme: c.scheme,
      });
      if (c.expect === 'valid') {
        expect(result).toMatchObject({ ok: true });
      } else {
        expect(result).toMatchObject({ ok: false, reason: c.reason });
      }
    });
  }

  it('reports which secret matched by index and the clock skew', () => {
    const c = vectors.cases.find((v) => v.name === 'valid_second_of_two_secrets')!;
    const r = verifySignature({
      header: c.header,
      body: Buffer.from(c.body_base64, 'base64'),
      secrets: c.secrets,
      now: c.now + 7,
      toleranceSeconds: 300,
    });
    expect(r).toEqual({ ok: true, secretIndex: 1, timestamp: c.now, skewSeconds: 7 });
  });

  it('sign() reproduces every valid vector digest', () => {
    for (const c of vectors.cases.filter((v) => v.expect === 'valid' && !v.header.includes('v0') && !v.header.includes(', '))) {
      const t = Number(/t=(\d+)/.exec(c.header)![1]);
      const header = sign({
        secret: c.secrets[c.secrets.length - 1]!,
        body: Buffer.from(c.body_base64, 'base64'),
        timestamp: t,
        scheme: c.scheme,
      });
      expect(c.header.endsWith(header.split(',v1=')[1]!)).toBe(true);
    }
  });
});
