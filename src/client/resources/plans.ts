import type { IdempotentCallOptions, PlanRunResult } from '../types.js';
import { notifyCreated, segment, type ResourceContext } from './context.js';

export function plansResource(ctx: ResourceContext) {
  return {
    /**
     * POST /plans/{plan_id}/runs. The request body is not shown in the spec, so it
     * is passed through. No Idempotency-Key is shown either: not retried unless
     * the caller passes one (a duplicated run would send everything twice).
     */
    async run(planId: string, body: Record<string, unknown> = {}, options: IdempotentCallOptions = {}): Promise<PlanRunResult> {
      const res = await ctx.transport.send({
        operation: 'plans.run',
        method: 'POST',
        path: `/plans/${segment('planId', planId)}/runs`,
        body,
        idempotencyKey: options.idempotencyKey,
        signal: options.signal,
      });
      // The answer beyond 202 is not shown; where it names the files the run creates, the sent ledger learns them.
      await notifyCreated(ctx, correspondenceIdsOf(res.body));
      return { accepted: true, body: res.body };
    },
  };
}

/** `correspondence_id` or `correspondence_ids` in a plan run's answer, when the service sends them. */
function correspondenceIdsOf(body: unknown): string[] {
  if (!body || typeof body !== 'object') return [];
  const b = body as { correspondence_id?: unknown; correspondence_ids?: unknown };
  const ids = [b.correspondence_id, ...(Array.isArray(b.correspondence_ids) ? b.correspondence_ids : [])];
  return ids.filter((v): v is string => typeof v === 'string' && v !== '');
}
