import type { FC } from 'hono/jsx';
import type { BrowseCursor, InboxPage } from '../../inbox/browse-queries.js';
import { INBOX_STATUSES } from '../../inbox/types.js';
import { count, masked, visible, when } from '../text.js';
import { urls } from '../urls.js';
import { Layout, Status, isOperator, type PageContext } from './layout.js';

/** The inbox filters as the query string carries them (every value as typed, so the form shows it back). */
export interface InboxQuery {
  status?: string | undefined;
  type?: string | undefined;
  correspondence?: string | undefined;
  event?: string | undefined;
  endpoint?: string | undefined;
  from?: string | undefined;
  to?: string | undefined;
}

export const cursorParam = (c: BrowseCursor): string => `${c.receivedAt}~${c.eventId}`;

const short = (s: string | null, max: number): string => (s === null ? '' : s.length > max ? `${s.slice(0, max - 1)}…` : s);

const Field: FC<{ id: string; label: string; value: string | undefined; hint?: string }> = ({ id, label, value, hint }) => (
  <div class="field">
    <label for={`f-${id}`}>{label}</label>
    <input
      id={`f-${id}`}
      name={id}
      value={value ?? ''}
      maxlength={256}
      autocomplete="off"
      aria-describedby={hint ? `h-${id}` : undefined}
    />
    {hint && (
      <small id={`h-${id}`} class="hint">
        {hint}
      </small>
    )}
  </div>
);

export const Inbox: FC<{ ctx: PageContext; query: InboxQuery; page: InboxPage; error: string | undefined; paged: boolean }> = ({
  ctx,
  query,
  page,
  error,
  paged,
}) => {
  const replayable = query.status === 'dead' || query.status === 'quarantined';
  const { ...filters } = query;
  return (
    <Layout ctx={ctx} title="Inbox" section="inbox">
      <form class="filters" method="get" action={urls.inbox()} aria-label="Filter the inbox">
        <div class="field">
          <label for="f-status">Status</label>
          <select id="f-status" name="status">
            <option value="" selected={!query.status}>
              any
            </option>
            {INBOX_STATUSES.map((s) => (
              <option value={s} selected={query.status === s}>
                {s}
              </option>
            ))}
          </select>
        </div>
        <Field id="type" label="Type" value={query.type} hint="e.g. participant.acted" />
        <Field id="correspondence" label="Correspondence id" value={query.correspondence} />
        <Field id="event" label="Event id" value={query.event} />
        <Field id="endpoint" label="Endpoint id" value={query.endpoint} />
        <Field id="from" label="Received from" value={query.from} hint="UTC, e.g. 2026-12-05T02:00, or 24h for the last day" />
        <Field id="to" label="Received before" value={query.to} hint="UTC" />
        <div class="field actions">
          <button type="submit">Filter</button>
          <a href={urls.inbox()}>Clear</a>
        </div>
      </form>
      {error && (
        <p class="error" role="alert">
          {visible(error)}
        </p>
      )}
      {replayable && isOperator(ctx) && (
        <p>
          <a class="button" href={urls.replay(filters)}>
            Replay the {query.status} events matching these filters…
          </a>
        </p>
      )}
      <table class="events">
        <caption>
          {page.rows.length === 0
            ? 'No event matches on this page.'
            : `${count(page.rows.length)} event${page.rows.length === 1 ? '' : 's'}, newest first${paged ? ' (an older page)' : ''}`}
        </caption>
        <thead>
          <tr>
            <th scope="col">received (UTC)</th>
            <th scope="col">event id</th>
            <th scope="col">type</th>
            <th scope="col">status</th>
            <th scope="col">source</th>
            <th scope="col">correspondence</th>
            <th scope="col">endpoint</th>
            <th scope="col">attempts</th>
            <th scope="col">last error</th>
          </tr>
        </thead>
        <tbody>
          {page.rows.map((r) => (
            <tr>
              <td class="time">{when(r.received_at)}</td>
              <td class="id">
                <a href={urls.event(r.event_id)}>{visible(r.event_id)}</a>
              </td>
              <td>{visible(r.type)}</td>
              <td>
                <Status value={r.status} />
              </td>
              <td>{visible(r.source)}</td>
              <td class="id">
                {r.correspondence_id ? <a href={urls.correspondence(r.correspondence_id)}>{visible(r.correspondence_id)}</a> : ''}
              </td>
              <td class="id">{visible(r.endpoint_id)}</td>
              <td class="num">{r.attempts}</td>
              <td>{masked(short(r.last_error, 120))}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <nav class="pager" aria-label="Pages">
        {paged && <a href={urls.inbox(filters)}>Newest</a>}
        {page.next && (
          <a href={urls.inbox({ ...filters, before: cursorParam(page.next) })} rel="next">
            Older events
          </a>
        )}
        {page.windowFull && page.next && (
          <span class="note">
            {`This page looked at ${count(page.scanned)} events back to ${when(new Date(page.next.receivedAt))}; older matches may follow.`}
          </span>
        )}
      </nav>
    </Layout>
  );
};
