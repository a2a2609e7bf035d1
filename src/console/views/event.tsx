import type { FC } from 'hono/jsx';
import type { EarlierUnfinished } from '../../inbox/browse-queries.js';
import type { InboxDetail } from '../../inbox/types.js';
import type { ExplanationRecord } from '../../reconciler/explanation-queries.js';
import type { Gap } from '../../reconciler/gap-queries.js';
import { masked, visible, when } from '../text.js';
import { urls } from '../urls.js';
import { Csrf, Facts, Layout, Status, isOperator, type PageContext } from './layout.js';

export interface OrderingHold {
  earlier: EarlierUnfinished;
  /** Whether the claim waits for it now (src/worker/claim-queries.ts), and why in words. */
  holds: boolean;
  why: string;
}

export interface EventData {
  event: InboxDetail;
  /** The envelope as shown: masked unless revealed. */
  envelope: unknown;
  revealed: boolean;
  hold: OrderingHold | undefined;
  /** What the reconciler's re-read found that made it write this event. */
  evidence: ExplanationRecord[];
  /** The gap recorded for this event id, if the service once gave up delivering it. */
  gap: Gap | undefined;
  /** The event's trace id, where the row keeps one. */
  traceId: string | undefined;
}

const SECRET_NOTE = 'position among the secrets tried: the configured list in order, or the endpoint’s stored secrets, current first';

export const EventView: FC<{ ctx: PageContext; data: EventData }> = ({ ctx, data }) => {
  const e = data.event;
  const replayable = e.status === 'dead' || e.status === 'quarantined';
  const headers = Object.entries(e.headers ?? {});
  return (
    <Layout ctx={ctx} title={`Event ${e.event_id}`} section="inbox">
      <Facts
        label="The event"
        items={[
          ['type', visible(e.type)],
          ['status', <Status value={e.status} />],
          ['source', visible(e.source)],
          ['at (envelope)', when(e.occurred_at)],
          ['received', when(e.received_at)],
          ['processed', when(e.processed_at)],
          [
            'correspondence',
            e.correspondence_id ? <a href={urls.correspondence(e.correspondence_id)}>{visible(e.correspondence_id)}</a> : '',
          ],
          ['endpoint', visible(e.endpoint_id)],
          [
            'verified with',
            e.secret_index === null ? 'no signature (not a webhook delivery)' : `secret #${e.secret_index} (${SECRET_NOTE})`,
          ],
          ...(data.traceId ? ([['trace id', visible(data.traceId)]] as Array<[string, string]>) : []),
        ]}
      />
      <section aria-labelledby="attempts">
        <h2 id="attempts">Attempts and errors</h2>
        <Facts
          label="Attempts"
          items={[
            ['attempts', String(e.attempts)],
            ['next attempt', e.status === 'received' || e.status === 'failed' ? when(e.next_attempt_at) : ''],
            ['held by worker', e.locked_by ? `${visible(e.locked_by)} until ${when(e.locked_until)}` : ''],
            ['last error', masked(e.last_error)],
          ]}
        />
        {replayable &&
          (isOperator(ctx) ? (
            <form method="post" action={urls.eventAction(e.event_id, 'replay')} data-confirm={`Replay ${e.event_id}?`}>
              <Csrf ctx={ctx} />
              <button type="submit">Replay this event</button>
            </form>
          ) : (
            <p class="note">An operator can replay this event.</p>
          ))}
      </section>
      <section aria-labelledby="ordering">
        <h2 id="ordering">Ordering</h2>
        {!data.hold ? (
          <p>
            {e.correspondence_id
              ? 'No earlier unfinished event of its correspondence.'
              : 'Not part of a correspondence: nothing orders it.'}
          </p>
        ) : (
          <p>
            {data.hold.holds ? 'Held back by ' : 'Not held back by '}
            <a href={urls.event(data.hold.earlier.event_id)}>{visible(data.hold.earlier.event_id)}</a>
            {` (${visible(data.hold.earlier.type)}, ${visible(data.hold.earlier.status)}, attempt ${data.hold.earlier.attempts}, at ${when(data.hold.earlier.occurred_at)}): ${data.hold.why}`}
          </p>
        )}
      </section>
      {(e.source === 'reconciler' || data.evidence.length > 0) && (
        <section aria-labelledby="evidence">
          <h2 id="evidence">Written by the reconciler</h2>
          {data.evidence.length === 0 ? (
            <p>The reconciler wrote this event; no stored difference names it.</p>
          ) : (
            <ExplanationTable rows={data.evidence} caption="What the re-read showed" />
          )}
        </section>
      )}
      {data.gap && (
        <section aria-labelledby="gap">
          <h2 id="gap">Gap</h2>
          <p>
            The service once gave up delivering this event: <a href={urls.gap(data.gap.gap_id)}>{`gap #${data.gap.gap_id}`}</a>{' '}
            <Status value={data.gap.status} /> {masked(data.gap.reason)}
          </p>
        </section>
      )}
      <section aria-labelledby="headers">
        <h2 id="headers">Delivery headers</h2>
        {headers.length === 0 ? (
          <p>None kept (the event did not arrive as a webhook delivery, or the headers were not stored).</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">header</th>
                <th scope="col">value</th>
              </tr>
            </thead>
            <tbody>
              {headers.map(([k, v]) => (
                <tr>
                  <td class="id">{visible(k)}</td>
                  <td>{data.revealed ? visible(v) : masked(v)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <section aria-labelledby="envelope">
        <h2 id="envelope">Envelope</h2>
        {data.revealed ? (
          <p class="flash" role="status">
            Personal data shown: your reveal is recorded in the audit log.
          </p>
        ) : (
          <div class="reveal">
            <p class="note">Names, national identity numbers, e-mail addresses and addressing are masked.</p>
            {isOperator(ctx) && e.payload !== null && (
              <form method="post" action={urls.eventAction(e.event_id, 'reveal')}>
                <Csrf ctx={ctx} />
                <button type="submit">Reveal personal data (recorded)</button>
              </form>
            )}
          </div>
        )}
        {data.envelope === null ? (
          <p>
            {e.pruned_at
              ? `Pruned at ${when(e.pruned_at)}.`
              : e.status === 'quarantined'
                ? `Not an event postroom can parse (${e.raw_body_bytes ?? 0} bytes kept: \`postroom inbox show ${visible(e.event_id)} --raw\`).`
                : 'No payload kept.'}
          </p>
        ) : (
          <pre class="json" tabindex={0} aria-label="Envelope as JSON">
            {visible(JSON.stringify(data.envelope, null, 2))}
          </pre>
        )}
      </section>
    </Layout>
  );
};

export const ExplanationTable: FC<{ rows: ExplanationRecord[]; caption: string }> = ({ rows, caption }) => (
  <table>
    <caption>{caption}</caption>
    <thead>
      <tr>
        <th scope="col">found</th>
        <th scope="col">run</th>
        <th scope="col">event type</th>
        <th scope="col">participant</th>
        <th scope="col">difference</th>
        <th scope="col">outcome</th>
        <th scope="col">written</th>
        <th scope="col">closed gap</th>
      </tr>
    </thead>
    <tbody>
      {rows.map((x) => (
        <tr>
          <td class="time">{when(x.created_at)}</td>
          <td>{x.run_id === null ? '' : <a href={urls.run(x.run_id)}>{`#${x.run_id}`}</a>}</td>
          <td>{visible(x.event_type)}</td>
          <td class="id">{visible(x.participant_id)}</td>
          <td>{masked(x.detail)}</td>
          <td>
            <Status value={x.outcome} />
          </td>
          <td class="id">{x.synthetic_event_id ? <a href={urls.event(x.synthetic_event_id)}>{visible(x.synthetic_event_id)}</a> : ''}</td>
          <td>{x.used_by_gap === null ? '' : <a href={urls.gap(x.used_by_gap)}>{`#${x.used_by_gap}`}</a>}</td>
        </tr>
      ))}
    </tbody>
  </table>
);
