import { Router, type Response } from 'express';
import type { Plane } from '../catalogue.js';
import type { Caller } from '../keys.js';
import { z } from 'zod';
import { addressingSchema } from '../addressing.js';
import { DELIVERY_STATUSES, EVENT_TYPES, PARTICIPANT_ACTS } from '../catalogue.js';
import { MAX_SEED_COUNT, MAX_TRIGGER_COUNT, type SandboxControl } from '../control.js';
import { SandboxApiError, apiErrors } from '../errors.js';
import type { FailureWindow, FaultConfig } from '../faults.js';
import { parseBody, queryParam, reply } from './http.js';

const rate = z.number().min(0).max(1);
const ms = z.number().min(0).max(600_000);

const faultPatchSchema = z.object({
  drop_rate: rate.optional(),
  duplicate_rate: rate.optional(),
  max_delay_ms: ms.optional(),
  reorder_rate: rate.optional(),
  reorder_delay_ms: ms.optional(),
  fail_share: rate.optional(),
  failure_window: z.null().optional(),
});

const schemas = {
  act: z.object({ act: z.enum(PARTICIPANT_ACTS, { error: `expected one of ${PARTICIPANT_ACTS.join(', ')}` }) }),
  verify: z.object({ addressing: addressingSchema }),
  attach: z.object({ document_id: z.string().min(1).max(100).optional() }),
  campaign: z.object({
    campaign_id: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,100}$/)
      .optional(),
    status: z.string().regex(/^[a-z_]{1,40}$/, 'expected a lower-case status such as running'),
  }),
  trigger: z.object({
    type: z.enum(EVENT_TYPES, { error: `expected one of ${EVENT_TYPES.join(', ')}` }),
    count: z.number().int().min(1).max(MAX_TRIGGER_COUNT).default(1),
    act: z.enum(PARTICIPANT_ACTS).optional(),
  }),
  endpoint: z.object({ url: z.string({ error: 'required, the webhook URL' }), events: z.array(z.string()).optional() }),
  window: z.object({
    duration_ms: z.number({ error: 'required, milliseconds' }).int().min(1).max(86_400_000),
    endpoint_id: z.string().min(1).max(128).optional(),
  }),
  seed: z.object({
    endpoint_id: z.string({ error: 'required, the endpoint the deliveries belong to' }).min(1).max(128),
    count: z
      .number({ error: `required, 1 to ${MAX_SEED_COUNT}` })
      .int()
      .min(1)
      .max(MAX_SEED_COUNT),
    status: z.enum(DELIVERY_STATUSES).default('dead'),
    event_type: z.enum(EVENT_TYPES).optional(),
  }),
  fund: z.object({ amount: z.number().int().min(1).max(1e12) }),
};

function windowView(w: FailureWindow): Record<string, unknown> {
  return { from: new Date(w.from).toISOString(), until: new Date(w.until).toISOString(), endpoint_id: w.endpointId ?? null };
}

export function faultsView(f: FaultConfig): Record<string, unknown> {
  return {
    drop_rate: f.dropRate,
    duplicate_rate: f.duplicateRate,
    max_delay_ms: f.maxDelayMs,
    reorder_rate: f.reorderRate,
    reorder_delay_ms: f.reorderDelayMs,
    fail_share: f.failShare,
    failure_window: f.failureWindow ? windowView(f.failureWindow) : null,
  };
}

/** `/sandbox/...`: drives the in-process control surface over HTTP. Not part of the service. */
export function createControlRouter(control: SandboxControl): Router {
  const r = Router();
  const id = (v: unknown): string => String(v);

  r.get('/correspondence', (_req, res) => reply(res, { status: 200, body: { correspondence: control.listCorrespondence() } }));
  r.get('/correspondence/:id', (req, res) => reply(res, { status: 200, body: control.correspondence(id(req.params.id)) }));
  r.get('/events', (req, res) => {
    const type = queryParam(req, 'type');
    const correspondenceId = queryParam(req, 'correspondence_id');
    const events = control.events({
      ...(type === undefined ? {} : { type }),
      ...(correspondenceId === undefined ? {} : { correspondenceId }),
    });
    reply(res, { status: 200, body: { events, total: events.length } });
  });
  r.get('/events/:event_id', (req, res) => reply(res, { status: 200, body: control.event(id(req.params.event_id)) }));
  r.get('/claims', (_req, res) => reply(res, { status: 200, body: { claims: control.claims() } }));

  r.post('/participants/:participant_id/act', (req, res) => {
    const { act } = parseBody(schemas.act, req.body);
    reply(res, { status: 200, body: { events: control.act(id(req.params.participant_id), act) } });
  });
  r.post('/participants/:participant_id/verify', (req, res) =>
    reply(res, { status: 200, body: control.verifyParticipant(id(req.params.participant_id)) }),
  );
  r.post('/recipients/verify', (req, res) => {
    const { addressing } = parseBody(schemas.verify, req.body);
    reply(res, { status: 200, body: control.verifyRecipient(addressing) });
  });
  r.post('/correspondence/:id/seal', (req, res) => reply(res, { status: 200, body: { event: control.seal(id(req.params.id)) } }));
  r.post('/correspondence/:id/withdraw', (req, res) => reply(res, { status: 200, body: { event: control.withdraw(id(req.params.id)) } }));
  r.post('/correspondence/:id/attach', (req, res) => {
    const { document_id } = parseBody(schemas.attach, req.body);
    reply(res, { status: 200, body: { event: control.attach(id(req.params.id), document_id) } });
  });
  r.post('/claims/:claim_id/claim', (req, res) => reply(res, { status: 200, body: { events: control.claim(id(req.params.claim_id)) } }));
  r.post('/claims/:claim_id/expire', (req, res) =>
    reply(res, { status: 200, body: { event: control.expireClaim(id(req.params.claim_id)) } }),
  );
  // What the control routes create belongs to the plane of the key that asks.
  const plane = (res: Response): Plane => (res.locals.caller as Caller).plane;
  r.post('/campaigns/status', (req, res) => {
    const b = parseBody(schemas.campaign, req.body);
    reply(res, {
      status: 200,
      body: {
        event: control.campaignStatus({ status: b.status, plane: plane(res), ...(b.campaign_id ? { campaignId: b.campaign_id } : {}) }),
      },
    });
  });
  r.post('/trigger', (req, res) => {
    const b = parseBody(schemas.trigger, req.body);
    reply(res, { status: 200, body: control.trigger(b.type, { count: b.count, plane: plane(res), ...(b.act ? { act: b.act } : {}) }) });
  });
  r.post('/endpoints', async (req, res) => {
    const b = parseBody(schemas.endpoint, req.body);
    reply(res, {
      status: 201,
      body: await control.registerEndpoint({ url: b.url, plane: plane(res), ...(b.events ? { events: b.events } : {}) }),
    });
  });

  r.get('/faults', (_req, res) => reply(res, { status: 200, body: faultsView(control.faults()) }));
  r.patch('/faults', (req, res) => {
    const b = parseBody(faultPatchSchema, req.body);
    const patch: Partial<FaultConfig> = {};
    if (b.drop_rate !== undefined) patch.dropRate = b.drop_rate;
    if (b.duplicate_rate !== undefined) patch.duplicateRate = b.duplicate_rate;
    if (b.max_delay_ms !== undefined) patch.maxDelayMs = b.max_delay_ms;
    if (b.reorder_rate !== undefined) patch.reorderRate = b.reorder_rate;
    if (b.reorder_delay_ms !== undefined) patch.reorderDelayMs = b.reorder_delay_ms;
    if (b.fail_share !== undefined) patch.failShare = b.fail_share;
    if (b.failure_window === null) patch.failureWindow = null;
    reply(res, { status: 200, body: faultsView(control.setFaults(patch)) });
  });
  r.post('/faults/failure-window', (req, res) => {
    const b = parseBody(schemas.window, req.body);
    reply(res, {
      status: 201,
      body: windowView(control.openFailureWindow({ durationMs: b.duration_ms, ...(b.endpoint_id ? { endpointId: b.endpoint_id } : {}) })),
    });
  });
  r.delete('/faults/failure-window', (_req, res) => {
    control.closeFailureWindow();
    reply(res, { status: 204 });
  });
  r.get('/fault-log', (_req, res) => reply(res, { status: 200, body: { entries: control.faultLog() } }));

  r.post('/seed-deliveries', (req, res) => {
    const b = parseBody(schemas.seed, req.body);
    reply(res, {
      status: 201,
      body: control.seedDeliveries({
        endpointId: b.endpoint_id,
        count: b.count,
        status: b.status,
        ...(b.event_type ? { eventType: b.event_type } : {}),
      }),
    });
  });

  r.get('/wallet', (_req, res) => reply(res, { status: 200, body: control.wallet() }));
  r.post('/wallet/fund', (req, res) => reply(res, { status: 200, body: control.fundWallet(parseBody(schemas.fund, req.body).amount) }));
  r.get('/stats', (_req, res) => reply(res, { status: 200, body: control.stats() }));
  r.get('/idle', async (req, res) => {
    const raw = queryParam(req, 'timeout_ms') ?? '30000';
    if (!/^\d{1,7}$/.test(raw) || Number(raw) < 1 || Number(raw) > 600_000)
      throw apiErrors.invalid('timeout_ms', 'expected a whole number from 1 to 600000');
    try {
      await control.waitForIdle(Number(raw));
    } catch {
      throw new SandboxApiError(504, 'still_busy', `The sandbox still had work in flight after ${raw} ms.`, { stats: control.stats() });
    }
    reply(res, { status: 200, body: { idle: true, stats: control.stats() } });
  });
  return r;
}
