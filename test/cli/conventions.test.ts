import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../../src/version.js';
import { runCli } from '../support/cli.js';
import { cliCommand, ROOT } from '../support/process.js';

const STACK = /\n\s+at /;

/** The CLI from source as a real process whose stdout reader has gone away (`postroom … | head -1` after the first line). */
function runIntoClosedPipe(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, cliCommand(args), {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('CLI conventions', () => {
  it('prints its version with --version and -V', async () => {
    for (const flag of ['--version', '-V']) {
      const r = await runCli([flag]);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(`${VERSION}\n`);
    }
  });

  it('ends quietly when the reader of its output goes away (EPIPE)', async () => {
    for (const args of [['--help'], ['inbox', 'list', '--help']]) {
      const r = await runIntoClosedPipe(args);
      expect(r.stderr, args.join(' ')).not.toMatch(STACK);
      expect(r.stderr, args.join(' ')).not.toMatch(/EPIPE/);
      expect(r.code, args.join(' ')).toBe(0);
    }
  });

  it.each([
    [['serve', '--role', 'bogus'], /all, ingress, worker, reconciler|all \| ingress \| worker \| reconciler/],
    [['inbox', 'list', '--status', 'lost'], /received, processing, processed|received \| processing \| processed/],
    [['inbox', 'replay', '--status', 'processed'], /dead, quarantined|dead \| quarantined/],
    [['deliveries', 'list', '--status', 'gone'], /pending|delivered|dead/],
    [['inbox', 'list', '--limit', 'many'], /--limit.*whole number from 1 to 10000/],
    [['inbox', 'list', '--since', 'yesterday'], /--since.*90s, 15m, 24h/],
  ])('refuses a bad option value like an unknown option: %j exits 64 with the accepted values', async (args, accepted) => {
    const r = await runCli(args, { POSTROOM_DATA_DIR: '/nonexistent/never' });
    expect(r.code).toBe(64);
    expect(r.stderr).toMatch(accepted);
    expect(r.stderr).toMatch(/--help/);
    expect(r.stderr).not.toMatch(STACK);
    expect(r.stdout).toBe('');
  });
});
