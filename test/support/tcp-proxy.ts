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
  /**
   * Stops forwarding without closing anything: open connections stay up but
   * carry nothing, new ones are accepted and go nowhere (a frozen database or a
   * half-open network), until `thaw()` delivers what was held.
   */
  freeze(): void;
  thaw(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let down = false;
  let frozen = false;
  const held: Array<() => void> = [];
  const server = net.createServer((client) => {
    if (down) {
      client.destroy();
      return;
    }
    if (frozen) {
      client.pause();
      sockets.add(client);
      client.on('error', () => client.destroy());
      held.push(() => connectUpstream(client));
      return;
    }
    connectUpstream(client);
  });
  const connectUpstream = (client: net.Socket): void => {
    if (client.destroyed) return;
    client.resume();
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
    forward(client, upstream);
    forward(upstream, client);
  };
  /** Like pipe, but holds every chunk while frozen and delivers them in order on thaw. */
  const pending: Array<() => void> = [];
  const forward = (from: net.Socket, to: net.Socket): void => {
    from.on('data', (chunk: Buffer) => {
      if (frozen) pending.push(() => to.write(chunk));
      else to.write(chunk);
    });
  };
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
    freeze() {
      frozen = true;
    },
    thaw() {
      frozen = false;
      for (const deliver of pending.splice(0)) deliver();
      for (const connect of held.splice(0)) connect();
    },
    close() {
      down = true;
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
