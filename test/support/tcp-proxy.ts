import net from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy between postroom and Postgres that a test can cut: `cut()` destroys
 * every open connection and refuses new ones until `restore()`.
 */
export interface TcpProxy {
  port: number;
  url(targetUrl: string): string;
  cut(): void;
  restore(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let down = false;
  const server = net.createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url(targetUrl) {
      const u = new URL(targetUrl);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    cut() {
      down = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    restore() {
      down = false;
    },
    close() {
      down = true;
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
