import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';

/**
 * libfaketime (Debian's `faketime` package) shifts one process's wall clock:
 *   LD_PRELOAD=<lib> FAKETIME="+90s" FAKETIME_DONT_FAKE_MONOTONIC=1 node …
 * Only CLOCK_REALTIME moves (Date.now(), the Date header, signature windows);
 * monotonic time, and so Node's timers, stay real.
 *
 * CI runs on a fresh clone as root with apt available, so when the library is
 * missing this installs it, non-interactively (apt-get update only if the plain
 * install fails). Anything else fails with what to do, rather than skipping the skew.
 */
const MULTIARCH: Record<string, string> = {
  x64: 'x86_64-linux-gnu',
  arm64: 'aarch64-linux-gnu',
  arm: 'arm-linux-gnueabihf',
  ia32: 'i386-linux-gnu',
};

function findLibrary(): string | undefined {
  const candidates = [
    `/usr/lib/${MULTIARCH[process.arch] ?? ''}/faketime/libfaketime.so.1`,
    '/usr/lib/faketime/libfaketime.so.1',
    '/usr/local/lib/faketime/libfaketime.so.1',
  ];
  const found = candidates.find((p) => fs.existsSync(p));
  if (found) return found;
  const listed = spawnSync('dpkg', ['-L', 'libfaketime'], { encoding: 'utf8' });
  return listed.status === 0 ? listed.stdout.split('\n').find((l) => l.endsWith('/libfaketime.so.1') && fs.existsSync(l)) : undefined;
}

export interface FaketimeSetup {
  library: string;
  /** How it was obtained, for the report. */
  how: 'present' | 'installed' | 'installed after apt-get update';
}

export function ensureFaketime(): FaketimeSetup {
  const present = findLibrary();
  if (present) return { library: present, how: 'present' };
  if (process.platform !== 'linux') throw new Error('the chaos suite skews a clock with libfaketime, which needs Linux');
  const root = process.getuid?.() === 0;
  const sudo = !root && spawnSync('sudo', ['-n', 'true']).status === 0;
  if (!root && !sudo)
    throw new Error(
      'libfaketime is missing and this user cannot install it: run `sudo apt-get install -y faketime` once, then re-run npm run test:chaos',
    );
  const apt = (args: string[]): boolean => {
    const cmd = sudo ? 'sudo' : 'apt-get';
    const argv = sudo ? ['-n', 'env', 'DEBIAN_FRONTEND=noninteractive', 'apt-get', ...args] : args;
    const r = spawnSync(cmd, argv, {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      encoding: 'utf8',
      timeout: 240_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (r.status !== 0)
      process.stderr.write(
        `[chaos] apt-get ${args.join(' ')} failed (${r.status ?? r.signal}): ${(r.stderr || r.stdout || '').slice(-500)}\n`,
      );
    return r.status === 0;
  };
  const install = ['install', '-y', '-q', '--no-install-recommends', 'faketime'];
  let how: FaketimeSetup['how'] = 'installed';
  if (!apt(install)) {
    how = 'installed after apt-get update';
    if (!apt(['update', '-q']) || !apt(install))
      throw new Error('could not install faketime with apt-get (see above); install it by hand: apt-get install -y faketime');
  }
  const library = findLibrary();
  if (!library)
    throw new Error(
      `faketime was installed but libfaketime.so.1 was not found (dpkg -L libfaketime: ${execFileSync('dpkg', ['-L', 'libfaketime'], { encoding: 'utf8' }).slice(0, 500)})`,
    );
  return { library, how };
}

/** Environment that runs a process with its wall clock `offsetSeconds` off. */
export function faketimeEnv(library: string, offsetSeconds: number): Record<string, string> {
  return {
    LD_PRELOAD: library,
    FAKETIME: `${offsetSeconds >= 0 ? '+' : ''}${offsetSeconds}s`,
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  };
}
