import type { FC } from 'hono/jsx';
import type { StatusCounts } from '../../inbox/count-queries.js';
import type { Gap } from '../../reconciler/gap-queries.js';
import type { RunRecord } from '../../reconciler/state-queries.js';
import type { TablePanel } from '../panels.js';
import { ago, count, masked, visible, when } from '../text.js';
import { urls } from '../urls.js';
import { BarChart, type ChartWindow } from './chart.js';
import { Csrf, Facts, Layout, Status, isOperator, type PageContext } from './layout.js';

export interface OverviewData {
  counts: StatusCounts;
  lastRun: RunRecord | undefined;
  openGaps: Gap[];
  openGapsMore: boolean;
  charts: ChartWindow[];
  panels: TablePanel[];
  /** Why "Reconcile now" cannot run here, when it cannot. */
  reconcileUnavailable: string | undefined;
}

/** What each outcome of a run means, with the exit code `postroom reconcile` gives for it. */
export const RUN_MEANING: Record<string, string> = {
  clean: 'exit 0: nothing a consumer needs is open',
  gaps_open: 'exit 2: gaps remain open and need a look',
  failed: 'exit 1: the run failed; the next one tries again',
  interrupted: 'the run was stopped before it finished; the next one resumes',
  running: 'running now',
};

const n = (v: unknown): string => (typeof v === 'number' ? count(v) : '');

export const RunSummary: FC<{ run: RunRecord }> = ({ run }) => {
  const s = (run.summary ?? {}) as Record<string, unknown>;
  const atRisk = (s.at_risk as { count?: number } | undefined)?.count;
  return (
    <Facts
      label={`Reconcile run ${run.run_id}`}
      items={[
        ['run', <a href={urls.run(run.run_id)}>{`#${run.run_id}`}</a>],
        ['outcome', <Status value={run.outcome} />],
        ['meaning', RUN_MEANING[run.outcome] ?? ''],
        ['started', when(run.started_at)],
        ['finished', when(run.finished_at)],
        ['by', visible(run.holder)],
        ['deliveries scanned', n(s.deliveries_scanned)],
        ['gaps found / open', `${n(s.gaps_found)} / ${n(s.gaps_open)}`],
        ['at risk (pending)', n(atRisk)],
        ['synthetic events written', n(s.synthetic_events_written)],
        ...(run.error ? ([['error', masked(run.error)]] as Array<[string, string]>) : []),
      ]}
    />
  );
};

export const ReconcileButton: FC<{ ctx: PageContext; unavailable: string | undefined }> = ({ ctx, unavailable }) =>
  !isOperator(ctx) ? (
    <p class="note">Operators can start a reconcile run from here.</p>
  ) : unavailable ? (
    <p class="note">{visible(unavailable)}</p>
  ) : (
    <form method="post" action={urls.reconcile()} data-confirm="Start a reconcile run now?">
      <Csrf ctx={ctx} />
      <button type="submit">Reconcile now</button>
    </form>
  );

export const Overview: FC<{ ctx: PageContext; data: OverviewData }> = ({ ctx, data }) => {
  const by = data.counts.by_status;
  const backlog = (by.received ?? 0) + (by.processing ?? 0) + (by.failed ?? 0);
  return (
    <Layout ctx={ctx} title="Overview" section="overview">
      <section aria-labelledby="now">
        <h2 id="now">Now</h2>
        <ul class="tiles">
          <li>
            <a href={urls.inbox({ status: 'received' })}>
              <strong>{count(backlog)}</strong> waiting to be processed
            </a>
            {backlog > 0 && <span class="sub">oldest {ago(data.counts.oldestUnfinishedAgeSeconds)} old</span>}
          </li>
          <li>
            <a href={urls.inbox({ status: 'failed' })}>
              <strong>{count(by.failed ?? 0)}</strong> failing, retrying
            </a>
          </li>
          <li class={(by.dead ?? 0) > 0 ? 'alarm' : ''}>
            <a href={urls.inbox({ status: 'dead' })}>
              <strong>{count(by.dead ?? 0)}</strong> dead
            </a>
          </li>
          <li class={(by.quarantined ?? 0) > 0 ? 'alarm' : ''}>
            <a href={urls.inbox({ status: 'quarantined' })}>
              <strong>{count(by.quarantined ?? 0)}</strong> quarantined
            </a>
          </li>
          <li class={data.openGaps.length > 0 ? 'alarm' : ''}>
            <a href={urls.gaps({ status: 'open' })}>
              <strong>{data.openGapsMore ? `${count(data.openGaps.length)}+` : count(data.openGaps.length)}</strong> open gaps
            </a>
          </li>
        </ul>
      </section>
      <section aria-labelledby="traffic">
        <h2 id="traffic">Events received and finished</h2>
        <div class="charts">
          {data.charts.map((w) => (
            <BarChart w={w} />
          ))}
        </div>
      </section>
      <section aria-labelledby="reconcile">
        <h2 id="reconcile">Latest reconcile run</h2>
        {data.lastRun ? <RunSummary run={data.lastRun} /> : <p>No reconcile run yet.</p>}
        <ReconcileButton ctx={ctx} unavailable={data.reconcileUnavailable} />
        <p class="note">
          The audit of delivered events (<code>postroom audit --since 24h</code>) is not stored; run it from the command line.
        </p>
      </section>
      <section aria-labelledby="gaps">
        <h2 id="gaps">Open gaps</h2>
        {data.openGaps.length === 0 ? (
          <p>No open gap: every event the service gave up on is in the inbox or closed with evidence.</p>
        ) : (
          <GapTable gaps={data.openGaps} caption="The newest open gaps" />
        )}
      </section>
      {data.panels.map((p) => (
        <section aria-label={p.title}>
          <h2>{visible(p.title)}</h2>
          <table>
            <thead>
              <tr>
                {p.columns.map((c) => (
                  <th scope="col">{visible(c)}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {p.rows.map((r) => (
                <tr>
                  {r.map((v) => (
                    <td>{v instanceof Date ? when(v) : visible(v)}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
          {p.note && <p class="note">{visible(p.note)}</p>}
        </section>
      ))}
    </Layout>
  );
};

export const GapTable: FC<{ gaps: Gap[]; caption: string }> = ({ gaps, caption }) => (
  <table>
    <caption>{caption}</caption>
    <thead>
      <tr>
        <th scope="col">gap</th>
        <th scope="col">status</th>
        <th scope="col">event type</th>
        <th scope="col">event id</th>
        <th scope="col">correspondence</th>
        <th scope="col">endpoint</th>
        <th scope="col">first seen</th>
        <th scope="col">reason</th>
      </tr>
    </thead>
    <tbody>
      {gaps.map((g) => (
        <tr>
          <td>
            <a href={urls.gap(g.gap_id)}>{`#${g.gap_id}`}</a>
          </td>
          <td>
            <Status value={g.status} />
          </td>
          <td>{visible(g.event_type)}</td>
          <td class="id">{visible(g.event_id)}</td>
          <td class="id">
            {g.correspondence_id ? <a href={urls.correspondence(g.correspondence_id)}>{visible(g.correspondence_id)}</a> : ''}
          </td>
          <td class="id">{visible(g.endpoint_id)}</td>
          <td>{when(g.first_seen_at)}</td>
          <td>{masked(g.reason)}</td>
        </tr>
      ))}
    </tbody>
  </table>
);
