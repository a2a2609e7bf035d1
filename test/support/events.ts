import { randomUUID } from 'node:crypto';
import { request, type Dispatcher } from 'undici';
import { sign, type SignedPayloadScheme } from '../../src/signature/index.js';

export interface Envelope {
  event_id: string;
  type: string;
  at: string;
  data: Record<string, unknown>;
}

export function makeEvent(overrides: Partial<Envelope> = {}): Envelope {
  return {
    event_id: `evt_${randomUUID()}`,
    type: 'participant.acted',
    at: new Date().toISOString(),
    data: { correspondence_id: 'cor_1', participant_id: 'par_1', act: 'approved', ref: 'emp-42' },
    ...overrides,
  };
}

export interface PostOptions {
  secret: string;
  /** Unix seconds for the signature; defaults to now. */
  timestamp?: number;
  scheme?: SignedPayloadScheme;
  headers?: Record<string, string>;
  /** Send these bytes instead of JSON.stringify(event). */
  body?: Buffer | string;
  /** undici's global dispatcher when absent. */
  dispatcher?: Dispatcher;
}

export interface PostResult {
  status: number;
  body: { status?: string; error?: { code: string; message: string } };
  headers: Record<string, string | string[] | undefined>;
}

/** Signs and posts like the service: signature, event id and type headers. */
export async function postEvent(url: string, event: Envelope | null, options: PostOptions): Promise<PostResult> {
  const body = options.body ?? JSON.stringify(event);
  const signature = sign({
    secret: options.secret,
    body,
    ...(options.timestamp === undefined ? {} : { timestamp: options.timestamp }),
    scheme: options.scheme ?? 'body',
  });
  const res = await request(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-service-signature': signature,
      ...(event ? { 'x-service-event-id': event.event_id, 'x-service-event-type': event.type } : {}),
      ...options.headers,
    },
    body,
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
  });
  const text = await res.body.text();
  let parsed: PostResult['body'] = {};
  try {
    parsed = JSON.parse(text) as PostResult['body'];
  } catch {
    parsed = {};
  }
  return { status: res.statusCode, body: parsed, headers: res.headers };
}
