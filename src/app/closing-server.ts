import http from 'node:http';
import net, { type Socket } from 'node:net';
import { PostroomError } from '../errors.js';

/** A node:http server that closes under senders' keep-alive load without cutting a request (createClosingServer). */
export interface ClosingServer {
  /** Listen on it as on any node:http server; close it through close(), not server.close(). */
  server: http.Server;
  /**
   * Stops accepting, lets in-flight requests finish, then cuts what is left after `graceMs` (0 to 2^31 - 1;
   * anything else rejects with `invalid_argument` and leaves the server serving). Calls after the first share its close.
   */
  close(graceMs: number): Promise<void>;
}

/**
 * An HTTP server that can close while its clients keep their connections busy. server.close() ends only
 * the connections idle at that moment, and the service (a sender at any load) never leaves one idle: the
 * server went on answering on them until the shutdown deadline, then cut the requests in flight. So once
 * closing, every answer, to a request in flight or read after, says Connection: close and ends its
 * connection, and the close is done when the last of them is sent.
 *
 * Nor does it close at once the connections idle when closing begins, as server.close() does: a busy sender
 * may be sending its next request on one at that moment, which would be reset (a failed attempt for the
 * service, one step nearer a dead delivery). They get IDLE_GRACE_MS to bring that request, answered with
 * Connection: close; those still idle then are closed, as keepAliveTimeout would close them.
 */
export function createClosingServer(options: http.ServerOptions, listener: http.RequestListener): ClosingServer {
  // Nothing per request until closing, so a server that is not closing pays nothing for it (bench/instructions.ts
  // counts the request path's instructions).
  const server = http.createServer(options, listener);
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  let closed: Promise<void> | undefined;
  return {
    server,
    close(graceMs) {
      // setTimeout takes NaN, a negative, Infinity or anything past 2^31 - 1 ms as 1 ms: a wish for a long grace would cut at once.
      if (typeof graceMs !== 'number' || !(graceMs >= 0 && graceMs <= MAX_TIMER_MS))
        return Promise.reject(
          new PostroomError(
            'invalid_argument',
            `graceMs must be a number of milliseconds from 0 to ${MAX_TIMER_MS}, got ${String(graceMs)}`,
          ),
        );
      closed ??= new Promise<void>((resolve) => {
        server.prependListener('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
          res.shouldKeepAlive = false;
        });
        for (const socket of sockets) {
          // The response a connection is working on: Node's own link, set while it is in flight and
          // cleared once it is sent (the one per-request reference there is; http-terminator reads it too).
          const res = (socket as Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage;
          if (res && !res.headersSent) res.shouldKeepAlive = false;
        }
        const sweep = setInterval(() => server.closeIdleConnections(), IDLE_GRACE_MS);
        const cut = setTimeout(() => server.closeAllConnections(), graceMs);
        // net.Server's close: stops accepting and calls back once every connection has ended, without
        // http.Server's closing of the idle ones first. Called with an error if it was not listening: closed either way.
        net.Server.prototype.close.call(server, () => {
          clearInterval(sweep);
          clearTimeout(cut);
          // http.Server's own: stops its checks of request time-outs (nothing is left to close).
          server.close();
          resolve();
        });
      });
      return closed;
    },
  };
}

const MAX_TIMER_MS = 2 ** 31 - 1;

/** Longer than a busy sender leaves a connection between two requests; short enough not to hold up a stop. */
const IDLE_GRACE_MS = 250;
