import type { AddressInfo } from 'node:net';
import type http from 'node:http';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createClosingServer, type ClosingServer } from '../../src/app/closing-server.js';

const opened: Array<{ web: ClosingServer; agent: Agent }> = [];
afterEach(async () => {
  for (const { web, agent } of opened.splice(0)) {
    await web.close(100);
    await agent.close();
  }
});

/** A server whose answers wait until released, and a client with `connections` kept connections to it. */
async function start(connections: number, keepAliveMs?: number) {
  const held: Array<() => void> = [];
  let answered = 0;
  const web = createClosingServer({}, (req: http.IncomingMessage, res: http.ServerResponse) => {
    req.resume();
    const answer = (): void => {
      answered++;
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
    };
    if (req.url === '/hold') held.push(answer);
    else answer();
  });
  await new Promise<void>((resolve) => web.server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(web.server.address() as AddressInfo).port}`;
  const agent = new Agent({ connections, ...(keepAliveMs ? { keepAliveTimeout: keepAliveMs, keepAliveMaxTimeout: keepAliveMs } : {}) });
  opened.push({ web, agent });
  const send = async (path: string) => {
    const res = await request(`${url}${path}`, { method: 'POST', body: 'x', dispatcher: agent });
    await res.body.text();
    return { status: res.statusCode, connection: res.headers.connection };
  };
  return { web, send, held, answered: () => answered };
}

describe('createClosingServer', () => {
  it('answers the requests in flight when closing begins with Connection: close, and is closed once they are sent', async () => {
    const { web, send, held } = await start(4);
    const inFlight = Array.from({ length: 4 }, () => send('/hold'));
    while (held.length < 4) await new Promise((resolve) => setTimeout(resolve, 5));
    let closed = false;
    const closing = web.close(60_000).then(() => (closed = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(closed).toBe(false);
    for (const answer of held) answer();
    expect(await Promise.all(inFlight)).toEqual(Array.from({ length: 4 }, () => ({ status: 200, connection: 'close' })));
    // Closed by the answers themselves, long before its 60 s grace ran out (the test's own time-out).
    await closing;
    await expect(send('/')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('answers a request sent on a connection that was idle when closing began, rather than resetting it', async () => {
    const { web, send, answered } = await start(1);
    expect(await send('/')).toEqual({ status: 200, connection: 'keep-alive' });
    const closing = web.close(60_000);
    // server.close() would have closed this idle connection at once, and this request would meet a reset.
    expect(await send('/')).toEqual({ status: 200, connection: 'close' });
    await closing;
    expect(answered()).toBe(2);
  });

  it('refuses a grace that a timer would take as 1 ms, and keeps serving', async () => {
    const { web, send } = await start(1);
    for (const grace of [Number.NaN, -1, Number.POSITIVE_INFINITY, 2 ** 31, '5000' as unknown as number]) {
      await expect(web.close(grace), String(grace)).rejects.toMatchObject({ code: 'invalid_argument' });
    }
    expect(web.server.listening).toBe(true);
    expect(await send('/')).toEqual({ status: 200, connection: 'keep-alive' });
    await web.close(0);
    expect(web.server.listening).toBe(false);
  });

  it('closes a connection that stays idle, without waiting for its grace', async () => {
    // Kept alive for as long as the client likes (undici's own default is 4 s): only the close can end it.
    const { web, send } = await start(1, 600_000);
    web.server.keepAliveTimeout = 0;
    expect(await send('/')).toEqual({ status: 200, connection: 'keep-alive' });
    await web.close(60_000);
    expect(web.server.listening).toBe(false);
  });
});
