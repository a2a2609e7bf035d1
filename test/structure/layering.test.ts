import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

/**
 * src/app is the only composition root: domain code imports neither it nor the
 * CLI. The rule lives in eslint.config.js (so `npm run lint` holds it); this
 * checks the rule catches what it is for (the tree itself is checked by the lint).
 */
const eslint = new ESLint({ cwd: process.cwd() });

async function restricted(code: string, filePath: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('layering', () => {
  it('refuses a domain module importing the composition root or the CLI', async () => {
    expect(
      await restricted("import type { Component } from '../app/server.js';\nexport type C = Component;\n", 'src/worker/probe.ts'),
    ).toHaveLength(1);
    expect(
      await restricted(
        "import { createPostroom } from '../../app/postroom.js';\nexport const c = createPostroom;\n",
        'src/reconciler/x/probe.ts',
      ),
    ).toHaveLength(1);
    expect(await restricted("import { run } from '../cli/main.js';\nexport const r = run;\n", 'src/ingress/probe.ts')).toHaveLength(1);
    expect(await restricted("import { run } from '../cli/main.js';\nexport const r = run;\n", 'src/app/probe.ts')).toHaveLength(1);
  });

  it('lets the composition root, the CLI and the public entry import app', async () => {
    expect(
      await restricted("import { startServer } from '../../app/server.js';\nexport const s = startServer;\n", 'src/cli/commands/probe.ts'),
    ).toEqual([]);
    expect(await restricted("import { startServer } from './server.js';\nexport const s = startServer;\n", 'src/app/probe.ts')).toEqual([]);
    expect(await restricted("export { createPostroom } from './app/postroom.js';\n", 'src/index.ts')).toEqual([]);
  });
});
