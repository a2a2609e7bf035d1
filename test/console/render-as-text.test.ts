import fc from 'fast-check';
import { jsx, type FC } from 'hono/jsx';
import { describe, expect, it } from 'vitest';
import type { InboxDetail, InboxRecord } from '../../src/inbox/types.js';
import type { Gap } from '../../src/reconciler/gap-queries.js';
import { maskValue } from '../../src/console/mask.js';
import { masked, visible } from '../../src/console/text.js';
import { Timeline, type TimelineData } from '../../src/console/views/correspondence.js';
import { EventView, type EventData } from '../../src/console/views/event.js';
import { Inbox } from '../../src/console/views/inbox.js';
import type { PageContext } from '../../src/console/views/layout.js';
import { GapView } from '../../src/console/views/reconcile.js';
import { parsePage } from './html.js';

/**
 * The service's data is hostile input: every value of an event, a gap or a correspondence must reach the
 * browser as text. Each page is rendered twice, once with arbitrary strings in every field and once with
 * a plain placeholder in each; parsed as a browser parses them (parse5), both pages must have the very
 * same elements and attribute names (nothing in the data became markup), and the text nodes must hold
 * the strings exactly, as shown (masking and the visible stand-ins for invisible characters aside).
 */

const ctx: PageContext = {
  identity: { name: 'ops', role: 'operator', via: 'token' },
  csrf: 'csrf-token',
  flash: undefined,
  assetVersion: 'v1',
};

/** Strings built to break out of text, attributes, comments, raw-text elements and encodings. */
const hostile = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        '<script>alert(1)</script>',
        '"',
        "'",
        '</textarea>',
        '</pre>',
        '</title>',
        '<!--',
        '-->',
        '&amp;',
        '&lt;',
        '<img src=x onerror=alert(1)>',
        '" onmouseover="x',
        "' autofocus onfocus='x",
        '`',
        '\u0000',
        '\r',
        '\r\n',
        '\ud800',
        '\udfff',
        '\u2028',
        '\ufeff',
        '<svg/onload=alert(1)>',
        'javascript:alert(1)',
        ']]>',
        '<![CDATA[',
        '\u202e',
      ),
      fc.string({ unit: 'binary', maxLength: 12 }),
      fc.string({ unit: 'grapheme', maxLength: 12 }),
    ),
    { minLength: 1, maxLength: 6 },
  )
  .map((parts) => parts.join(''))
  // Values that are only whitespace render as empty cells, like a placeholder does not.
  .filter((s) => s.trim() !== '');

function render<P extends object>(component: FC<P>, props: P): string {
  return `<!doctype html>${String(jsx(component as FC, props as Record<string, unknown>).toString())}`;
}

interface Fields {
  eventId: string;
  type: string;
  correspondenceId: string;
  endpointId: string;
  lastError: string;
  lockedBy: string;
  headerName: string;
  headerValue: string;
  dataKey: string;
  dataValue: string;
  reason: string;
}

const PLAIN: Fields = {
  eventId: 'evt_x',
  type: 'type.x',
  correspondenceId: 'cor_x',
  endpointId: 'ep_x',
  lastError: 'error x',
  lockedBy: 'worker x',
  headerName: 'x-header',
  headerValue: 'value x',
  dataKey: 'key_x',
  dataValue: 'value x',
  reason: 'reason x',
};

const fields = fc.record<Fields>({
  eventId: hostile,
  type: hostile,
  correspondenceId: hostile,
  endpointId: hostile,
  lastError: hostile,
  lockedBy: hostile,
  headerName: hostile,
  headerValue: hostile,
  dataKey: hostile,
  dataValue: hostile,
  reason: hostile,
});

const at = new Date('2026-12-05T02:00:00Z');

function record(f: Fields): InboxRecord {
  return {
    event_id: f.eventId,
    type: f.type,
    status: 'dead',
    source: 'webhook',
    occurred_at: at,
    received_at: at,
    correspondence_id: f.correspondenceId,
    endpoint_id: f.endpointId,
    attempts: 3,
    next_attempt_at: at,
    last_error: f.lastError,
    processed_at: null,
  };
}

function payload(f: Fields): unknown {
  return {
    event_id: f.eventId,
    type: f.type,
    at: at.toISOString(),
    data: { correspondence_id: f.correspondenceId, [f.dataKey]: f.dataValue, nested: [f.dataValue] },
  };
}

function eventData(f: Fields): EventData {
  const event: InboxDetail = {
    ...record(f),
    payload: payload(f),
    headers: { [f.headerName]: f.headerValue },
    secret_index: 0,
    locked_by: f.lockedBy,
    locked_until: at,
    pruned_at: null,
    raw_body_bytes: 100,
  };
  return { event, envelope: maskValue(event.payload), revealed: false, hold: undefined, evidence: [], gap: undefined, traceId: undefined };
}

function gap(f: Fields): Gap {
  return {
    gap_id: 7,
    event_id: f.eventId,
    event_type: f.type,
    endpoint_id: f.endpointId,
    delivery_id: f.lockedBy,
    delivery_created_at: at,
    last_error: f.lastError,
    correspondence_id: f.correspondenceId,
    status: 'open',
    reason: f.reason,
    first_seen_at: at,
    last_seen_at: at,
    resolved_at: null,
    evidence: { detail: f.dataValue, [f.dataKey]: f.reason },
  };
}

function timeline(f: Fields): TimelineData {
  return {
    correspondenceId: f.correspondenceId,
    events: [{ ...record(f), payload: payload(f) }],
    more: false,
    explanations: [],
    gaps: [gap(f)],
    projection: undefined,
    service: {
      read_at: at,
      run_id: 3,
      file: {
        correspondence_id: f.correspondenceId,
        status: 'sent',
        kind: f.type,
        subject: f.reason,
        document_ids: [f.eventId],
        send_summary: null,
        participants: [{ participant_id: f.endpointId, state: 'delivered', ref: f.headerValue, last_act: f.dataKey }],
      },
    },
    differences: [
      {
        kind: 'participant_field',
        correspondenceId: f.correspondenceId,
        participantId: f.endpointId,
        field: 'last_act',
        projection: f.dataValue,
        service: f.dataKey,
      },
      { kind: 'field', correspondenceId: f.correspondenceId, field: 'subject', projection: f.lastError, service: f.reason },
    ],
  };
}

const pages: Array<[string, (f: Fields) => string, (f: Fields) => string[]]> = [
  [
    'event',
    (f) => render(EventView, { ctx, data: eventData(f) }),
    (f) => [
      visible(f.type),
      visible(f.correspondenceId),
      visible(f.endpointId),
      masked(f.lastError),
      visible(f.headerName),
      masked(f.headerValue),
      JSON.stringify(maskValue(payload(f)), null, 2).replace(/\r/g, '\u240d'),
    ],
  ],
  [
    'inbox',
    (f) =>
      render(Inbox, {
        ctx,
        query: { status: 'dead', type: f.type, correspondence: f.correspondenceId },
        page: { rows: [record(f)], next: null, scanned: 1, windowFull: false },
        error: undefined,
        paged: false,
      }),
    (f) => [visible(f.eventId), visible(f.type), visible(f.correspondenceId), visible(f.endpointId)],
  ],
  [
    'gap',
    (f) => render(GapView, { ctx, gap: gap(f) }),
    (f) => [masked(f.reason), visible(f.eventId), visible(f.type), visible(f.correspondenceId), visible(f.endpointId), masked(f.lastError)],
  ],
  [
    'timeline',
    (f) => render(Timeline, { ctx, data: timeline(f) }),
    (f) => [
      visible(f.type),
      visible(f.eventId),
      visible(f.endpointId),
      masked(f.reason),
      masked(f.headerValue),
      visible(f.dataKey),
      masked(f.lastError),
    ],
  ],
];

describe('every value from an event renders as text', () => {
  for (const [name, page, shown] of pages) {
    it(`${name} page: the same elements and attributes whatever the data, and the data in text nodes exactly`, () => {
      const reference = parsePage(page(PLAIN)).skeleton;
      fc.assert(
        fc.property(fields, (f) => {
          const parsed = parsePage(page(f));
          expect(parsed.skeleton).toEqual(reference);
          for (const text of shown(f)) expect(parsed.texts).toContain(text);
          // Nothing from the data reached an attribute that a browser acts on.
          for (const el of parsed.elements) {
            for (const [attr, value] of Object.entries(el.attrs)) {
              expect(attr.startsWith('on')).toBe(false);
              if (attr === 'href' || attr === 'action' || attr === 'src')
                expect(value === '#main' || value.startsWith('/console/') || value === '/console', value).toBe(true);
            }
          }
        }),
        { numRuns: 150 },
      );
    });
  }

  it('masks personal data in the envelope by key and by shape, and shows the rest as it is', () => {
    const envelope = {
      event_id: 'evt_1',
      data: {
        display_name: 'Ola Nordmann',
        addressing: { type: 'email', email: 'ola@example.com' },
        note: 'NIN 12345678901, mail ola@example.com',
        participants: [{ first_name: 'Kari', last_name: 'Nordmann', ref: 'r-1' }],
        act: 'read',
      },
    };
    const html = render(EventView, { ctx, data: { ...eventData(PLAIN), envelope: maskValue(envelope) } });
    expect(html).not.toMatch(/Nordmann|Ola|Kari|12345678901|ola@example\.com/);
    expect(html).toContain('&quot;act&quot;: &quot;read&quot;');
    expect(html).toContain('[nin]');
    expect(html).toContain('[e-mail]');
    expect(html).toContain('&quot;type&quot;: &quot;email&quot;');
  });
});
