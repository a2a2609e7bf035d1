import { createHmac } from 'node:crypto';

/** `body` is the spec's scheme (HMAC over the raw body); `timestamp.body` signs `<t>.<body>` as well. */
export type SignedPayloadScheme = 'body' | 'timestamp.body';

export const SIGNED_PAYLOAD_SCHEMES: readonly SignedPayloadScheme[] = ['body', 'timestamp.body'];

export function computeDigest(secret: string, timestamp: number, body: Uint8Array, scheme: SignedPayloadScheme): Buffer {
  const mac = createHmac('sha256', Buffer.from(secret, 'utf8'));
  if (scheme === 'timestamp.body') mac.update(`${timestamp}.`, 'utf8');
  mac.update(body);
  return mac.digest();
}

export interface SignOptions {
  secret: string;
  body: Uint8Array | string;
  /** Unix seconds; defaults to now. */
  timestamp?: number;
  scheme?: SignedPayloadScheme;
}

/** Builds an `X-Service-Signature` value exactly as the service does. Used by tests, the CLI and the sandbox. */
export function sign(options: SignOptions): string {
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const body = typeof options.body === 'string' ? Buffer.from(options.body, 'utf8') : options.body;
  const digest = computeDigest(options.secret, timestamp, body, options.scheme ?? 'body');
  return `t=${timestamp},v1=${digest.toString('hex')}`;
}
