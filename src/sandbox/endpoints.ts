import type { Clock } from '../clock.js';
import { SUBSCRIBABLE_EVENT_TYPES, isSubscribable, type Plane } from './catalogue.js';
import { SandboxApiError, apiErrors } from './errors.js';
import { randomToken, type IdFactory } from './ids.js';
import type { Endpoint, EndpointView, SandboxState } from './state.js';
import { endpointView } from './state.js';
import { checkWebhookUrl, type LookupAll } from './url-policy.js';

export interface EndpointInput {
  url?: unknown;
  events?: unknown;
  active?: unknown;
}

/**
 * Endpoints belong to the plane of the key that created them: the other plane's keys
 * get 404 for them, and they receive only their own plane's events. `plane` undefined
 * (control routes only) reaches every endpoint.
 */
export interface EndpointService {
  /** The only place besides rotateSecret where the secret leaves the sandbox. */
  create(input: EndpointInput, plane: Plane): Promise<EndpointView & { secret: string }>;
  list(query: { limit: number; cursor?: string | undefined }, plane: Plane): { endpoints: EndpointView[]; next_cursor: string | null };
  get(endpointId: string, plane?: Plane): Endpoint;
  update(endpointId: string, input: EndpointInput, plane: Plane): Promise<EndpointView>;
  remove(endpointId: string, plane: Plane): void;
  rotateSecret(endpointId: string, plane: Plane): EndpointView & { secret: string };
  /** Active endpoints of the plane that receive this type. */
  subscribers(type: string, plane: Plane): Endpoint[];
}

export function generateSecret(): string {
  return `whsec_${randomToken(24)}`;
}

export function createEndpointService(deps: {
  state: SandboxState;
  clock: Clock;
  ids: IdFactory;
  allowPrivateTargets: boolean;
  lookup?: LookupAll | undefined;
}): EndpointService {
  const { state } = deps;

  const get = (id: string, plane?: Plane): Endpoint => {
    const e = state.endpoints.get(id);
    if (!e || (plane !== undefined && e.plane !== plane)) throw apiErrors.notFound('webhook endpoint', id);
    return e;
  };

  const checkUrl = async (raw: unknown): Promise<string> => {
    const result = await checkWebhookUrl(raw, {
      allowPrivateTargets: deps.allowPrivateTargets,
      ...(deps.lookup ? { lookup: deps.lookup } : {}),
    });
    if (!result.ok)
      throw new SandboxApiError(422, 'invalid_webhook_url', `url: ${result.message}.`, { field: 'url', reason: result.reason });
    return result.url;
  };

  const checkEvents = (raw: unknown): string[] => {
    if (!Array.isArray(raw)) throw apiErrors.invalid('events', 'expected an array of event type names');
    const out: string[] = [];
    for (const [i, t] of raw.entries()) {
      if (typeof t !== 'string') throw apiErrors.invalid(`events[${i}]`, 'expected an event type name (a string)');
      if (t === 'webhook.test')
        throw apiErrors.invalid(`events[${i}]`, 'webhook.test cannot be subscribed to; every endpoint receives it from the test operation');
      if (!isSubscribable(t))
        throw apiErrors.invalid(`events[${i}]`, `unknown event type "${t.slice(0, 60)}"; accepted: ${SUBSCRIBABLE_EVENT_TYPES.join(', ')}`);
      if (!out.includes(t)) out.push(t);
    }
    return out;
  };

  const checkActive = (raw: unknown): boolean => {
    if (typeof raw !== 'boolean') throw apiErrors.invalid('active', 'expected true or false');
    return raw;
  };

  return {
    async create(input, plane) {
      const url = await checkUrl(input.url);
      // The spec: an endpoint created without `events` subscribes to nothing.
      const events = input.events === undefined ? [] : checkEvents(input.events);
      const active = input.active === undefined ? true : checkActive(input.active);
      const e: Endpoint = {
        endpointId: deps.ids.next('we'),
        url,
        events,
        active,
        createdAt: deps.clock.now(),
        secret: generateSecret(),
        plane,
      };
      state.endpoints.set(e.endpointId, e);
      return { ...endpointView(e), secret: e.secret };
    },
    list({ limit, cursor }, plane) {
      const all = [...state.endpoints.values()].filter((e) => e.plane === plane);
      let start = 0;
      if (cursor !== undefined) {
        const text = cursor.length <= 400 ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
        const m = /^e1:([A-Za-z0-9_]{1,100})$/.exec(text);
        if (!m) throw apiErrors.invalid('cursor', 'not a cursor this API returned; pass next_cursor back unchanged');
        // Ids sort in creation order, so the position survives the deletion of the endpoint it names.
        start = all.findIndex((e) => e.endpointId > m[1]!);
        if (start === -1) start = all.length;
      }
      const page = all.slice(start, start + limit);
      const more = start + limit < all.length;
      const last = page[page.length - 1];
      return {
        endpoints: page.map(endpointView),
        next_cursor: more && last ? Buffer.from(`e1:${last.endpointId}`).toString('base64url') : null,
      };
    },
    get,
    async update(id, input, plane) {
      const e = get(id, plane);
      if (input.url === undefined && input.events === undefined && input.active === undefined)
        throw apiErrors.invalid('body', 'send url and/or events (or active) to change');
      const url = input.url === undefined ? e.url : await checkUrl(input.url);
      const events = input.events === undefined ? e.events : checkEvents(input.events);
      const active = input.active === undefined ? e.active : checkActive(input.active);
      // Checked again: the endpoint may have been deleted while the URL resolved.
      const current = get(id, plane);
      current.url = url;
      current.events = events;
      current.active = active;
      return endpointView(current);
    },
    remove(id, plane) {
      get(id, plane);
      state.endpoints.delete(id);
    },
    rotateSecret(id, plane) {
      const e = get(id, plane);
      // Replaced outright: the spec says the old secret stops working at once.
      e.secret = generateSecret();
      return { ...endpointView(e), secret: e.secret };
    },
    subscribers(type, plane) {
      const out: Endpoint[] = [];
      for (const e of state.endpoints.values()) if (e.active && e.plane === plane && e.events.includes(type)) out.push(e);
      return out;
    },
  };
}
