import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseUrl } from '../../src/cli/commands/endpoints.js';
import { ROOT } from '../support/process.js';

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Checks on the code and files themselves, for properties no single behaviour test pins down. */
describe('security properties of the code base', () => {
  it('compares no secret, key, signature or digest with === or !== (constant-time comparison only)', () => {
    const suspicious =
      /\b\w*(secret|apikey|api_key|signature|digest|hmac|token)\w*\s*[!=]==\s*(?!undefined\b|null\b|'|"|`|\d)|[!=]==\s*\w*(secret|apikey|api_key|signature|digest|hmac|token)\w*\b(?!\s*(\.length|===|!==))/i;
    const offenders: string[] = [];
    for (const file of sources(path.join(ROOT, 'src'))) {
      fs.readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          const code = line.replace(/\/\/.*$/, '');
          if (suspicious.test(code) && !/typeof |\.length|=== (undefined|null)|!== (undefined|null)/.test(code))
            offenders.push(`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(offenders).toEqual([]);
    // And the comparisons that matter do use timingSafeEqual.
    for (const f of ['src/signature/verify.ts']) expect(fs.readFileSync(path.join(ROOT, f), 'utf8')).toContain('timingSafeEqual');
  });

  it('builds a container that runs as a non-root user', () => {
    const dockerfile = fs.readFileSync(path.join(ROOT, 'deploy/Dockerfile'), 'utf8');
    const users = [...dockerfile.matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1]);
    expect(users.length).toBeGreaterThan(0);
    expect(users[users.length - 1]).not.toMatch(/^(root|0)(:|$)/);
  });

  it('registers https webhook URLs only (plain http only on loopback, for a local sandbox)', () => {
    expect(parseUrl('--url', 'https://hooks.example.com/webhooks')).toBe('https://hooks.example.com/webhooks');
    expect(parseUrl('--url', 'http://127.0.0.1:8080/webhooks')).toBe('http://127.0.0.1:8080/webhooks');
    expect(() => parseUrl('--url', 'http://hooks.example.com/webhooks')).toThrow(/expected an https URL/);
    expect(() => parseUrl('--url', 'http://10.0.0.5/webhooks')).toThrow(/expected an https URL/);
    expect(() => parseUrl('--url', 'ftp://hooks.example.com/x')).toThrow(/https/);
    expect(() => parseUrl('--url', 'https://user:pw@hooks.example.com/x')).toThrow(/credentials/);
  });
});
