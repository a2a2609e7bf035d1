import { PassThrough, Readable } from 'node:stream';
import { main } from '../../src/cli/main.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in-process with captured output and the given environment (nothing inherited). */
export async function runCli(args: string[], env: Record<string, string> = {}, input?: string): Promise<CliRun> {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (d) => (out += d));
  stderr.on('data', (d) => (err += d));
  const stdin = input === undefined ? undefined : Readable.from([input]);
  const code = await main(
    ['node', 'postroom', ...args],
    { NODE_ENV: 'test', ...env },
    { stdout, stderr, interactive: false, ...(stdin ? { stdin } : {}) },
  );
  return { code, stdout: out, stderr: err };
}
