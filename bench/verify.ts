/**
 * Verification alone: postroom's verifySignature against the verifiers a user
 * might reach for, on the same body and the same HMAC-SHA256 work.
 */
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { sign, verifySignature } from '../src/signature/index.js';
import { opsPerSecond, table, writeResult } from './lib/report.js';

export async function benchVerify(options: { ms?: number } = {}): Promise<Record<string, unknown>> {
  const ms = options.ms ?? 2000;
  const body = Buffer.from(
    JSON.stringify({
      event_id: 'evt_01HZX3K9Q7',
      type: 'participant.acted',
      at: '2026-11-18T10:15:00Z',
      data: { correspondence_id: 'cor_8812', participant_id: 'par_1', act: 'approved', ref: 'emp-42' },
    }),
  );
  const text = body.toString('utf8');
  const secret = 'whsec_7c4f0d2b9e8a41f6a3c5b1e0d9f8a7b6';
  const now = Math.floor(Date.now() / 1000);

  const ours = sign({ secret, body, timestamp: now });
  const oursTs = sign({ secret, body, timestamp: now, scheme: 'timestamp.body' });
  const check = (r: { ok: boolean }): void => {
    if (!r.ok) throw new Error('verification failed in the benchmark');
  };

  const stripe = new Stripe('sk_test_bench');
  const stripeHeader = stripe.webhooks.generateTestHeaderString({ payload: text, secret });
  const swSecret = Buffer.from(secret).toString('base64');
  const wh = new Webhook(swSecret);
  const swHeaders = {
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(now),
    'webhook-signature': wh.sign('msg_1', new Date(now * 1000), text),
  };

  const rows = [
    {
      verifier: 'postroom verifySignature (body)',
      ops: opsPerSecond(() => check(verifySignature({ header: ours, body, secrets: [secret], now, toleranceSeconds: 300 })), ms),
    },
    {
      verifier: 'postroom verifySignature (timestamp.body)',
      ops: opsPerSecond(
        () => check(verifySignature({ header: oursTs, body, secrets: [secret], now, toleranceSeconds: 300, scheme: 'timestamp.body' })),
        ms,
      ),
    },
    {
      verifier: 'postroom verify + JSON.parse',
      ops: opsPerSecond(() => {
        check(verifySignature({ header: ours, body, secrets: [secret], now, toleranceSeconds: 300 }));
        JSON.parse(text);
      }, ms),
    },
    {
      verifier: 'stripe webhooks.signature.verifyHeader',
      ops: opsPerSecond(() => stripe.webhooks.signature!.verifyHeader(text, stripeHeader, secret, 300), ms),
    },
    { verifier: 'standardwebhooks Webhook.verify (parses)', ops: opsPerSecond(() => wh.verify(text, swHeaders), ms) },
  ];
  const stripeOps = rows[3]!.ops;
  const swOps = rows[4]!.ops;
  const out = rows.map((r) => ({
    verifier: r.verifier,
    'calls/s': Math.round(r.ops),
    'vs stripe': r.ops / stripeOps,
    'vs standardwebhooks': r.ops / swOps,
  }));
  console.log('\nVerification alone (one secret, one v1, same body)');
  table(out, ['verifier', 'calls/s', 'vs stripe', 'vs standardwebhooks']);
  return { bodyBytes: body.length, rows: out };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await benchVerify();
  console.log(`\nwrote ${writeResult('verify', result)}`);
}
