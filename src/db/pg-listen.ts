import pg from 'pg';
import type { Logger } from '../logging/logger.js';

/**
 * LISTEN on a connection of its own, reconnecting a second after it is lost (or
 * could not be made: polling covers the gap meanwhile). Each live connection is in
 * `listeners` so closing the store ends it. Resolves to the function that stops listening.
 */
export async function listenWithReconnect(input: {
  newClient: () => pg.Client;
  channel: string;
  onPayload: (payload: string) => void;
  listeners: Set<pg.Client>;
  logger: Logger;
}): Promise<() => Promise<void>> {
  const { channel, onPayload, listeners, logger } = input;
  let stopped = false;
  let client: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  const connect = async (): Promise<void> => {
    const c = input.newClient();
    c.on('notification', (msg) => {
      if (msg.channel === channel) onPayload(msg.payload ?? '');
    });
    c.on('error', (err) => {
      logger.warn({ err, channel }, 'notification connection lost; reconnecting');
      listeners.delete(c);
      c.end().catch(() => undefined);
      scheduleReconnect();
    });
    await c.connect();
    await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    if (stopped) {
      await c.end();
      return;
    }
    client = c;
    listeners.add(c);
  };
  const scheduleReconnect = (): void => {
    if (stopped || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      connect().catch(() => scheduleReconnect());
    }, 1000);
    retryTimer.unref();
  };
  try {
    await connect();
  } catch (err) {
    // Polling covers the gap; keep trying in the background.
    logger.warn({ err, channel }, 'could not LISTEN; will retry');
    scheduleReconnect();
  }
  return async () => {
    stopped = true;
    if (retryTimer) clearTimeout(retryTimer);
    if (client) {
      listeners.delete(client);
      await client.end().catch(() => undefined);
    }
  };
}
