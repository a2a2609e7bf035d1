import type { IdempotentCallOptions, PlanRunResult } from '../types.js';
import { segment, type ResourceContext } from './context.js';

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
      return { accepted: true, body: res.body };
    },
  };
}
