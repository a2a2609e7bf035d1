import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { applyHeapGrowth } from '../../src/app/heap-growth.js';
import { loadConfig } from '../../src/config/config.js';
import { nodeScript, ROOT } from '../support/process.js';

const run = promisify(execFile);

/** Runs test/support/heap-growth-child.ts: the mark-compacts V8 ran with the percent applied the way serve does. */
async function majors(
  percent: string,
  nodeArgs: string[] = [],
): Promise<{ majors: number; applied?: { source: string; percent?: number } }> {
  const { stdout } = await run(process.execPath, nodeScript('test/support/heap-growth-child.ts', [percent], nodeArgs), {
    cwd: ROOT,
    timeout: 60_000,
  });
  return JSON.parse(stdout.trim()) as { majors: number; applied?: { source: string; percent?: number } };
}

describe('applyHeapGrowth', () => {
  it('sets V8 flag from the setting, leaves V8 to choose at 0, and lets the command line win', () => {
    const set: string[] = [];
    const setFlags = (f: string) => set.push(f);
    expect(applyHeapGrowth(100, { execArgv: [], setFlags })).toEqual({ source: 'postroom', percent: 100 });
    expect(applyHeapGrowth(0, { execArgv: ['--max-semi-space-size=16'], setFlags })).toEqual({ source: 'v8', percent: undefined });
    expect(applyHeapGrowth(100, { execArgv: ['--heap-growing-percent=300'], setFlags })).toEqual({
      source: 'command-line',
      percent: 300,
    });
    expect(applyHeapGrowth(100, { execArgv: ['--heap_growing_percent=50'], setFlags })).toEqual({ source: 'command-line', percent: 50 });
    expect(applyHeapGrowth(100, { execArgv: ['--heap-growing-percent', '20'], setFlags })).toEqual({ source: 'command-line', percent: 20 });
    expect(set).toEqual(['--heap-growing-percent=100']);
  });

  it('defaults to 100 and refuses a value out of range with the setting named', () => {
    expect(loadConfig({}).heapGrowingPercent).toBe(100);
    expect(loadConfig({ POSTROOM_HEAP_GROWING_PERCENT: '0' }).heapGrowingPercent).toBe(0);
    expect(() => loadConfig({ POSTROOM_HEAP_GROWING_PERCENT: '1000' })).toThrow(/POSTROOM_HEAP_GROWING_PERCENT/);
  });

  // Set once the process runs, the flag must still change when V8 collects: a flag V8 read only at start would
  // leave both runs alike. The same promotion-heavy load, with the smallest factor and with a large one.
  it('changes how often V8 runs mark-compacts in a running process, and yields to the command line', async () => {
    // Side by side: what V8 counts follows what a child allocates, not how fast it runs; one after another took most of this file's time.
    const [tight, loose, commandLine] = await Promise.all([majors('10'), majors('300'), majors('10', ['--heap-growing-percent=300'])]);
    expect(tight.applied).toEqual({ source: 'postroom', percent: 10 });
    expect(commandLine.applied).toEqual({ source: 'command-line', percent: 300 });
    expect(tight.majors).toBeGreaterThanOrEqual(2 * loose.majors);
    expect(tight.majors).toBeGreaterThanOrEqual(2 * commandLine.majors);
  }, 120_000);
});
