import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The README's TypeScript examples, as written: every ```ts block after an
 * `<!-- example -->` marker typechecks against the package (`postroom`,
 * `postroom/service` and `postroom/sandbox` mapped to the sources), and those marked
 * `<!-- example: run -->` also run. They cannot rot without this failing.
 */
const run = promisify(execFile);
const ROOT = process.cwd();
const DOCS = ['README.md', 'docs/worker.md'];

interface Example {
  file: string;
  line: number;
  code: string;
  runs: boolean;
}

function examples(doc: string): Example[] {
  const text = fs.readFileSync(path.join(ROOT, doc), 'utf8');
  const found: Example[] = [];
  const marker = /<!-- example(: run)? -->\n```ts\n([\s\S]*?)\n```/g;
  for (let m = marker.exec(text); m; m = marker.exec(text)) {
    found.push({ file: doc, line: text.slice(0, m.index).split('\n').length, code: `${m[2]!}\n`, runs: m[1] !== undefined });
  }
  return found;
}

describe('README examples run as written', () => {
  const all = DOCS.flatMap(examples);
  let dir: string;
  const fileOf = (i: number): string => path.join(dir, `example-${i}.ts`);

  beforeAll(() => {
    // Inside the checkout so `express`, `pg` and @types resolve from its node_modules.
    dir = fs.mkdtempSync(path.join(ROOT, '.readme-examples-'));
    all.forEach((e, i) => fs.writeFileSync(fileOf(i), `// ${e.file}:${e.line}\n${e.code}`));
    fs.writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: '../tsconfig.json',
        compilerOptions: {
          noEmit: true,
          paths: {
            postroom: ['../src/index.ts'],
            'postroom/service': ['../src/service.ts'],
            'postroom/sandbox': ['../src/sandbox/index.ts'],
          },
        },
        include: ['*.ts'],
      }),
    );
  });
  afterAll(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('finds the marked examples', () => {
    expect(all.filter((e) => e.file === 'README.md').length).toBeGreaterThanOrEqual(3);
    expect(all.some((e) => e.runs)).toBe(true);
  });

  it('typechecks every marked example against the public entry points', async () => {
    const tsc = path.join(ROOT, 'node_modules/typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')]).then(
      () => '',
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
    expect(result).toBe('');
  }, 180_000);

  it('runs the examples marked to run', async () => {
    const tsx = path.join(ROOT, 'node_modules/tsx/dist/cli.mjs');
    for (const [i, e] of all.entries()) {
      if (!e.runs) continue;
      const { stdout } = await run(process.execPath, [tsx, '--tsconfig', path.join(dir, 'tsconfig.json'), fileOf(i)], {
        cwd: dir,
        timeout: 60_000,
      });
      if (e.code.includes('constructEvent')) expect(stdout, `${e.file}:${e.line}`).toBe('approved\nno_matching_signature\n');
    }
  }, 120_000);
});
