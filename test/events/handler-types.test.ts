import { describe, expect, expectTypeOf, it } from 'vitest';
import type { AnyKnownEvent, EventData, PostroomEvent } from '../../src/events/catalogue.js';
import type { HandlerContext, HandlerMap } from '../../src/events/handlers.js';
import { createHandlerRegistry } from '../../src/events/registry.js';
import type { Queryable } from '../../src/db/types.js';
import { createPostroom } from '../../src/app/postroom.js';
import type { Db } from '../../src/db/types.js';

/*
 * The @ts-expect-error lines are the type tests: `npx tsc --noEmit -p tsconfig.json`
 * fails if any of them stops being an error (the payload type would not follow
 * the event type). The runtime assertions cover what plain JavaScript modules can
 * get wrong.
 */
const db = { kind: 'pglite' } as unknown as Db;

describe('handler types follow the event type', () => {
  it('types event.data by the registered type', () => {
    const postroom = createPostroom({ db });
    postroom.on('participant.acted', (event, ctx) => {
      expectTypeOf(event.data.act).toEqualTypeOf<string>();
      expectTypeOf(event.data.participant_id).toEqualTypeOf<string>();
      expectTypeOf(event.type).toEqualTypeOf<'participant.acted'>();
      expectTypeOf(ctx.tx).toEqualTypeOf<Queryable>();
      expectTypeOf(ctx.attempt).toEqualTypeOf<number>();
      // @ts-expect-error participant.acted has no delivered count
      void event.data.delivered;
      // @ts-expect-error act is a string, not a number
      const n: number = event.data.act;
      void n;
    });
    postroom.on('correspondence.send_completed', (event) => {
      expectTypeOf(event.data.delivered).toEqualTypeOf<number>();
      expectTypeOf(event.data.total).toEqualTypeOf<number>();
      // @ts-expect-error send_completed has no act
      void event.data.act;
    });
    postroom.on('wallet.debited', (event) => {
      expectTypeOf(event.data.amount).toEqualTypeOf<number>();
      expectTypeOf(event.data.currency).toEqualTypeOf<string | undefined>();
    });
    postroom.on('correspondence.created', (event) => {
      const first = event.data.participants?.[0];
      if (first) expectTypeOf(first.state).toEqualTypeOf<string>();
    });
    // @ts-expect-error not an event type the service sends
    expect(() => postroom.on('participant.acts', () => undefined)).toThrow(/not an event type/);
    // @ts-expect-error a handler for one type cannot be registered for another
    postroom.on('correspondence.sealed', (event: PostroomEvent<'participant.acted'>) => void event.data.act);
  });

  it('types only the documented fields, so a misspelt field does not compile', () => {
    type Acted = EventData<'participant.acted'>;
    expectTypeOf<Acted['ref']>().toEqualTypeOf<string>();
    // @ts-expect-error unknown fields are kept at run time but not typed
    type _Extra = Acted['anything_new'];
    const handler = (event: PostroomEvent<'participant.acted'>): unknown => {
      // @ts-expect-error participantId is not participant_id
      void event.data.participantId;
      // Extra fields the service adds are there; reading one takes a deliberate cast.
      return (event.data as Record<string, unknown>).anything_new;
    };
    void handler;
    expectTypeOf<EventData<'correspondence.created'>['participants']>().toEqualTypeOf<
      Array<{ participant_id: string; ref: string; state: string }> | undefined
    >();
  });

  it('narrows the union by type in a catch-all or every-event handler', () => {
    const handle = (event: AnyKnownEvent): string => {
      switch (event.type) {
        case 'participant.acted':
          return event.data.act;
        case 'campaign.status_changed':
          return event.data.status;
        default:
          // @ts-expect-error not narrowed: other types have no act
          return event.data.act;
      }
    };
    void handle;
    const postroom = createPostroom({ db });
    postroom.onUnknown((event) => {
      expectTypeOf(event.type).toEqualTypeOf<string>();
      expectTypeOf(event.data).toEqualTypeOf<Record<string, unknown>>();
    });
  });

  it('types handler maps per key, with "*" for unknown types', () => {
    const map: HandlerMap = {
      'participant.acted': async (event) => void event.data.act,
      'claim.claimed': [(event) => void event.data.claim_id, (event) => void event.data.participant_id],
      '*': (event) => void event.type,
    };
    const bad: HandlerMap = {
      // @ts-expect-error claim events have no act
      'claim.expired': (event) => void event.data.act,
    };
    void bad;
    const registry = createHandlerRegistry();
    registry.use(map);
    expect(registry.handlersFor('known', 'participant.acted')).toHaveLength(1);
    expect(registry.handlersFor('known', 'claim.claimed')).toHaveLength(2);
    expect(registry.handlersFor('unknown', 'x.y')).toHaveLength(1);
    expect(registry.handlersFor('known', 'webhook.test')).toHaveLength(0);
  });

  it('types ctx.api by the client given to createPostroom', () => {
    const api = { getCorrespondence: async (id: string) => ({ correspondence_id: id }) };
    const postroom = createPostroom({ db, api });
    postroom.on('correspondence.sealed', async (event, ctx) => {
      expectTypeOf(ctx.api).toEqualTypeOf<typeof api>();
      await ctx.api.getCorrespondence(event.data.correspondence_id);
    });
    expectTypeOf<HandlerContext['api']>().toEqualTypeOf<unknown>();
  });

  it('refuses what a plain JavaScript handler module could get wrong', () => {
    const registry = createHandlerRegistry();
    expect(() => registry.use({ 'participant.acted': 'not a function' } as never)).toThrow(/must be a function/);
    expect(() => registry.use({ 'participant.act': () => undefined } as never)).toThrow(/not an event type/);
    expect(() => registry.use(null as never)).toThrow(/handler map/);
  });

  it('runs type handlers before every-event handlers, and every-event handlers for unknown types too', () => {
    const registry = createHandlerRegistry();
    const own = (): void => undefined;
    const every = (): void => undefined;
    const unknown = (): void => undefined;
    registry.on('participant.acted', own);
    registry.onEvery(every);
    registry.onUnknown(unknown);
    expect(registry.handlersFor('known', 'participant.acted')).toEqual([own, every]);
    expect(registry.handlersFor('known', 'webhook.test')).toEqual([every]);
    expect(registry.handlersFor('unknown', 'x.y')).toEqual([unknown, every]);
  });
});
