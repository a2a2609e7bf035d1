// Shared by the reference receivers: the least a correct receiver must do with a
// request before storing it. Plain Node, no framework, no TypeScript loader.
import { createHmac, timingSafeEqual } from 'node:crypto';

const SIG = /t=(\d+),v1=([0-9a-f]{64})/;
// The bench widens the window for its cached, pre-signed requests; postroom reads the same variable.
const TOLERANCE = Number(process.env.POSTROOM_SIGNATURE_TOLERANCE_SECONDS ?? 300);

/** Reads the body, checks the HMAC (constant time) and the timestamp window, parses the JSON. */
export function readVerified(req, secret, onEvent, onReject) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
    const m = SIG.exec(String(req.headers['x-service-signature'] ?? ''));
    if (!m) return onReject(401);
    const expected = createHmac('sha256', secret).update(body).digest();
    if (!timingSafeEqual(expected, Buffer.from(m[2], 'hex')) || Math.abs(Date.now() / 1000 - Number(m[1])) > TOLERANCE)
      return onReject(401);
    let event;
    try {
      event = JSON.parse(body.toString('utf8'));
    } catch {
      return onReject(400);
    }
    onEvent(event, body);
  });
}

export function answer(res, status) {
  const text = status === 200 ? '{"status":"ok"}' : '{"status":"error"}';
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
