/**
 * A Postgres cluster of the bench's own, for measurements that need server settings the shared one must not be
 * given (a preloaded extension needs a restart, and the machine's cluster is never restarted by a bench or a
 * test). initdb into a temporary folder, started on a free port, stopped and removed by `stop()`. Same major
 * version as the machine's, `fsync` on as there, so its costs are the shared cluster's.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export interface PrivateCluster {
  /** An admin URL for the cluster's `postgres` database. */
  url: string;
  port: number;
  stop(): void;
}

/** The newest Postgres server binaries installed the Debian way (/usr/lib/postgresql/<major>/bin). */
function serverBin(): string {
  const root = '/usr/lib/postgresql';
  const majors = fs.existsSync(root)
    ? fs
        .readdirSync(root)
        .filter((d) => fs.existsSync(path.join(root, d, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors.length === 0) throw new Error(`no Postgres server binaries under ${root}; install postgresql (apt-get install -y postgresql)`);
  return path.join(root, majors[0]!, 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts a cluster with `settings` appended to its postgresql.conf. initdb refuses to run as root, so as root
 * the cluster belongs to the `postgres` user, as the machine's does.
 */
export async function startPrivateCluster(settings: Record<string, string>): Promise<PrivateCluster> {
  const bin = serverBin();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'postroom-pg-'));
  const data = path.join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]): void => {
    const argv = asRoot ? ['-u', 'postgres', '--', path.join(bin, cmd), ...args] : args;
    const result = spawnSync(asRoot ? 'runuser' : path.join(bin, cmd), argv, { encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`${cmd} failed (${result.status}): ${result.stderr || result.stdout}`);
  };
  if (asRoot) execFileSync('chown', ['postgres', dir]);
  const port = await freePort();
  let started = false;
  const stop = (): void => {
    if (started) {
      started = false;
      try {
        run('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
      } catch {
        // already gone
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    run('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-instructions']);
    const conf = {
      port: String(port),
      listen_addresses: "'127.0.0.1'",
      unix_socket_directories: `'${dir}'`,
      fsync: 'on',
      synchronous_commit: 'on',
      ...settings,
    };
    fs.appendFileSync(
      path.join(data, 'postgresql.conf'),
      Object.entries(conf)
        .map(([k, v]) => `${k} = ${v}\n`)
        .join(''),
    );
    run('pg_ctl', ['-D', data, '-l', path.join(dir, 'log'), '-w', 'start']);
    started = true;
  } catch (err) {
    stop();
    throw err;
  }
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, port, stop };
}
