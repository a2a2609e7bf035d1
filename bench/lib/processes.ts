import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Samples a process's resident set size; `stop()` returns the peak in MiB. */
export function sampleRss(pid: number, everyMs = 100): { stop(): number } {
  let peak = 0;
  const read = (): void => {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
      if (m) peak = Math.max(peak, Number(m[1]) / 1024);
    } catch {
      // process gone
    }
  };
  read();
  const timer = setInterval(read, everyMs);
  return {
    stop() {
      clearInterval(timer);
      read();
      return peak;
    },
  };
}
