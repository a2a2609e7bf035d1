import type { Agent } from 'undici';
import { makeEvent, postEvent } from './events.js';

export interface SentAnswer {
  eventId: string;
  /** Sent after closing() was called (the test runs both ends, so the order is exact). */
  sentWhileClosing: boolean;
  /** Answered after closing() was called. */
  answeredWhileClosing: boolean;
  status: number;
  connection: string | undefined;
}

/**
 * Senders as the service is one: `count` of them on an agent's kept connections, each sending its next signed
 * event as soon as the last is answered, until stop(). A failure is anything but an answer, except a refused
 * connection after closing() (the listener closed: the door, not a request cut).
 */
export function startBusySenders(options: { url: string; secret: string; agent: Agent; count: number }) {
  const answers: SentAnswer[] = [];
  const failures: string[] = [];
  let closing = false;
  let stopped = false;
  const senders = Array.from({ length: options.count }, async () => {
    while (!stopped) {
      const event = makeEvent();
      const sentWhileClosing = closing;
      try {
        const r = await postEvent(options.url, event, { secret: options.secret, dispatcher: options.agent });
        const connection = r.headers.connection;
        answers.push({
          eventId: event.event_id,
          sentWhileClosing,
          answeredWhileClosing: closing,
          status: r.status,
          connection: typeof connection === 'string' ? connection.toLowerCase() : undefined,
        });
      } catch (err) {
        const code = (err as { code?: string }).code ?? (err as Error).message;
        if (!(sentWhileClosing && code === 'ECONNREFUSED'))
          failures.push(`${sentWhileClosing ? 'sent while closing' : 'sent before'}: ${code}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
  });
  return {
    answers,
    failures,
    /** Resolves once `n` answers are in. */
    async answered(n: number): Promise<void> {
      while (answers.length < n) await new Promise((resolve) => setTimeout(resolve, 10));
    },
    /** Marks what is sent and answered from now on as while closing. */
    closing(): void {
      closing = true;
    },
    async stop(): Promise<void> {
      stopped = true;
      await Promise.all(senders);
    },
  };
}
