import type { FC } from 'hono/jsx';
import { GAP_STATUSES, type Gap } from '../../reconciler/gap-queries.js';
import type { RunRecord } from '../../reconciler/state-queries.js';
import { maskValue } from '../mask.js';
import { masked, visible, when } from '../text.js';
import { urls } from '../urls.js';
import { Csrf, Facts, Layout, Status, isOperator, type PageContext } from './layout.js';
import { GapTable, RUN_MEANING, ReconcileButton, RunSummary } from './overview.js';

export const Gaps: FC<{ ctx: PageContext; status: string | undefined; gaps: Gap[]; next: number | undefined; paged: boolean }> = ({
  ctx,
  status,
  gaps,
  next,
  paged,
}) => (
  <Layout ctx={ctx} title="Gaps" section="gaps">
    <p>Events the service gave up delivering that postroom did not have, and what became of each.</p>
    <nav class="tabs" aria-label="Gap status">
      <ul>
        {[undefined, ...GAP_STATUSES].map((s) => (
          <li>
            <a href={urls.gaps({ status: s })} aria-current={s === status ? 'page' : undefined}>
              {s ?? 'all'}
            </a>
          </li>
        ))}
      </ul>
    </nav>
    {gaps.length === 0 ? (
      <p>No gap{status ? ` is ${status}` : ''}.</p>
    ) : (
      <GapTable gaps={gaps} caption={`Gaps${status ? `: ${status}` : ''}, newest first`} />
    )}
    <nav class="pager" aria-label="Pages">
      {paged && <a href={urls.gaps({ status })}>Newest</a>}
      {next !== undefined && (
        <a href={urls.gaps({ status, before: next })} rel="next">
          Older gaps
        </a>
      )}
    </nav>
  </Layout>
);

export const GapView: FC<{ ctx: PageContext; gap: Gap }> = ({ ctx, gap }) => (
  <Layout ctx={ctx} title={`Gap #${gap.gap_id}`} section="gaps">
    <Facts
      label="The gap"
      items={[
        ['status', <Status value={gap.status} />],
        ['reason', masked(gap.reason)],
        ['event', <a href={urls.event(gap.event_id)}>{visible(gap.event_id)}</a>],
        ['event type', visible(gap.event_type)],
        [
          'correspondence',
          gap.correspondence_id ? <a href={urls.correspondence(gap.correspondence_id)}>{visible(gap.correspondence_id)}</a> : '',
        ],
        ['endpoint', visible(gap.endpoint_id)],
        ['delivery', `${visible(gap.delivery_id)} created ${when(gap.delivery_created_at)}`],
        ['delivery’s last error', masked(gap.last_error)],
        ['first seen', when(gap.first_seen_at)],
        ['last seen', when(gap.last_seen_at)],
        ['resolved', when(gap.resolved_at)],
      ]}
    />
    <section aria-labelledby="evidence">
      <h2 id="evidence">Evidence</h2>
      {gap.evidence ? (
        <pre class="json" tabindex={0} aria-label="Evidence as JSON">
          {visible(JSON.stringify(maskValue(gap.evidence), null, 2))}
        </pre>
      ) : (
        <p>None: {gap.status === 'open' ? 'the gap is open.' : 'closed without stored evidence.'}</p>
      )}
    </section>
    {gap.status === 'open' &&
      (isOperator(ctx) ? (
        <section aria-labelledby="ignore">
          <h2 id="ignore">Ignore this gap</h2>
          <form method="post" action={urls.ignoreGap(gap.gap_id)} class="stack">
            <Csrf ctx={ctx} />
            <label for="reason">Why it needs no recovery (kept with the gap and in the audit log)</label>
            <textarea id="reason" name="reason" required minlength={3} maxlength={500} rows={3}></textarea>
            <button type="submit">Ignore gap #{gap.gap_id}</button>
          </form>
        </section>
      ) : (
        <p class="note">An operator can ignore this gap with a written reason.</p>
      ))}
  </Layout>
);

export const Runs: FC<{
  ctx: PageContext;
  runs: RunRecord[];
  next: number | undefined;
  paged: boolean;
  unavailable: string | undefined;
}> = ({ ctx, runs, next, paged, unavailable }) => (
  <Layout ctx={ctx} title="Reconcile runs" section="runs">
    <ReconcileButton ctx={ctx} unavailable={unavailable} />
    {runs.length === 0 ? (
      <p>No run yet.</p>
    ) : (
      <table>
        <caption>Runs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">run</th>
            <th scope="col">started</th>
            <th scope="col">finished</th>
            <th scope="col">outcome</th>
            <th scope="col">meaning</th>
            <th scope="col">gaps found</th>
            <th scope="col">open after</th>
            <th scope="col">written</th>
            <th scope="col">by</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => {
            const s = (r.summary ?? {}) as Record<string, unknown>;
            return (
              <tr>
                <td>
                  <a href={urls.run(r.run_id)}>{`#${r.run_id}`}</a>
                </td>
                <td class="time">{when(r.started_at)}</td>
                <td class="time">{when(r.finished_at)}</td>
                <td>
                  <Status value={r.outcome} />
                </td>
                <td>{RUN_MEANING[r.outcome] ?? ''}</td>
                <td class="num">{visible(s.gaps_found)}</td>
                <td class="num">{visible(s.gaps_open)}</td>
                <td class="num">{visible(s.synthetic_events_written)}</td>
                <td>{visible(r.holder)}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    )}
    <nav class="pager" aria-label="Pages">
      {paged && <a href={urls.runs()}>Newest</a>}
      {next !== undefined && (
        <a href={urls.runs({ before: next })} rel="next">
          Older runs
        </a>
      )}
    </nav>
  </Layout>
);

export const RunView: FC<{ ctx: PageContext; run: RunRecord }> = ({ ctx, run }) => (
  <Layout ctx={ctx} title={`Reconcile run #${run.run_id}`} section="runs">
    <RunSummary run={run} />
    <section aria-labelledby="summary">
      <h2 id="summary">Summary</h2>
      {run.summary ? (
        <pre class="json" tabindex={0} aria-label="Summary as JSON">
          {visible(JSON.stringify(maskValue(run.summary), null, 2))}
        </pre>
      ) : (
        <p>No summary stored{run.outcome === 'running' ? ' yet: the run is in progress' : ''}.</p>
      )}
    </section>
  </Layout>
);
