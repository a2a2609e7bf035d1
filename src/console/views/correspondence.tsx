import type { FC } from 'hono/jsx';
import type { TimelineEvent } from '../../inbox/browse-queries.js';
import type { ProjectionDifference } from '../../projection/compare.js';
import type { ProjectedCorrespondence } from '../../projection/read.js';
import type { ExplanationRecord } from '../../reconciler/explanation-queries.js';
import type { Gap } from '../../reconciler/gap-queries.js';
import type { StoredServiceState } from '../../reconciler/service-state-queries.js';
import { masked, visible, when } from '../text.js';
import { urls } from '../urls.js';
import { ExplanationTable } from './event.js';
import { Facts, Layout, Status, type PageContext } from './layout.js';
import { GapTable } from './overview.js';

export interface TimelineData {
  correspondenceId: string;
  events: TimelineEvent[];
  more: boolean;
  explanations: ExplanationRecord[];
  gaps: Gap[];
  projection: ProjectedCorrespondence | undefined;
  /** The service's answer to the reconciler's latest re-read of the file, when there was one. */
  service: StoredServiceState | undefined;
  /** How the projection differs from that answer now (none when they agree). */
  differences: ProjectionDifference[];
}

/** The few data fields that say what an event did, masked like the rest. */
function gist(e: TimelineEvent): string {
  const data = (e.payload as { data?: Record<string, unknown> } | null)?.data;
  if (!data || typeof data !== 'object') return '';
  const parts: string[] = [];
  for (const key of ['act', 'participant_id', 'status', 'document_id', 'delivered', 'held', 'undeliverable', 'total', 'kind']) {
    const v = data[key];
    if (typeof v === 'string' || typeof v === 'number') parts.push(`${key} ${v}`);
  }
  return parts.join(', ');
}

const ProjectionFacts: FC<{ p: ProjectedCorrespondence; label: string }> = ({ p, label }) => (
  <div>
    <Facts
      label={label}
      items={[
        ['status', <Status value={p.status ?? 'unknown'} />],
        ['kind', visible(p.kind)],
        ['subject', masked(p.subject)],
        ['documents', visible(p.document_ids.join(', '))],
        [
          'send summary',
          p.send_summary
            ? `delivered ${p.send_summary.delivered}, held ${p.send_summary.held}, undeliverable ${p.send_summary.undeliverable} of ${p.send_summary.total}`
            : '',
        ],
        ['last event', `${visible(p.last_event.type)} at ${when(p.last_event.at)}`],
      ]}
    />
    <table>
      <caption>{`Participants (${p.participants.length})`}</caption>
      <thead>
        <tr>
          <th scope="col">participant</th>
          <th scope="col">ref</th>
          <th scope="col">state</th>
          <th scope="col">last act</th>
          <th scope="col">at</th>
        </tr>
      </thead>
      <tbody>
        {p.participants.map((x) => (
          <tr>
            <td class="id">{visible(x.participant_id)}</td>
            <td>{masked(x.ref)}</td>
            <td>
              <Status value={x.state} />
            </td>
            <td>{visible(x.last_act)}</td>
            <td class="time">{when(x.last_act_at)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);

const ServiceFacts: FC<{ s: StoredServiceState }> = ({ s }) => (
  <div>
    <Facts
      label="The service"
      items={[
        ['read', `${when(s.read_at)}${s.run_id === null ? '' : ` by reconcile run ${s.run_id}`}`],
        ['status', <Status value={s.file.status} />],
        ['kind', visible(s.file.kind ?? '')],
        ['subject', masked(s.file.subject ?? '')],
        ['documents', visible((s.file.document_ids ?? []).join(', '))],
        [
          'send summary',
          s.file.send_summary
            ? `delivered ${s.file.send_summary.delivered}, held ${s.file.send_summary.held}, undeliverable ${s.file.send_summary.undeliverable} of ${s.file.send_summary.total}`
            : '',
        ],
      ]}
    />
    <table>
      <caption>{`Participants (${s.file.participants.length})`}</caption>
      <thead>
        <tr>
          <th scope="col">participant</th>
          <th scope="col">ref</th>
          <th scope="col">state</th>
          <th scope="col">last act</th>
        </tr>
      </thead>
      <tbody>
        {s.file.participants.map((x) => (
          <tr>
            <td class="id">{visible(x.participant_id)}</td>
            <td>{masked(x.ref ?? '')}</td>
            <td>
              <Status value={x.state} />
            </td>
            <td>{visible(x.last_act ?? '')}</td>
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);

/** A difference in words; refs and subjects are personal data, so values of those fields are masked. */
function describeDifference(d: ProjectionDifference): [string, string, string] {
  const shown = (field: string, v: unknown): string => {
    const text = v === null || v === undefined ? '(none)' : typeof v === 'string' ? v : JSON.stringify(v);
    return field === 'ref' || field === 'subject' ? masked(text) : visible(text);
  };
  switch (d.kind) {
    case 'missing_correspondence':
      return ['the correspondence', 'not projected', 'exists'];
    case 'field':
      return [d.field, shown(d.field, d.projection), shown(d.field, d.service)];
    case 'missing_participant':
      return [`participant ${visible(d.participantId)}`, 'absent', visible(d.service)];
    case 'unexpected_participant':
      return [`participant ${visible(d.participantId)}`, visible(d.projection), 'absent'];
    case 'participant_field':
      return [`participant ${visible(d.participantId)}: ${d.field}`, shown(d.field, d.projection), shown(d.field, d.service)];
  }
}

const Differences: FC<{ rows: ProjectionDifference[] }> = ({ rows }) =>
  rows.length === 0 ? (
    <p>The projection agrees with the service’s last answer.</p>
  ) : (
    <table>
      <caption>{`Where the projection differs from the service’s last answer (${rows.length})`}</caption>
      <thead>
        <tr>
          <th scope="col">what</th>
          <th scope="col">projection</th>
          <th scope="col">service</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((d) => {
          const [what, p, s] = describeDifference(d);
          return (
            <tr>
              <td>{what}</td>
              <td>{p}</td>
              <td>{s}</td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );

export const Timeline: FC<{ ctx: PageContext; data: TimelineData }> = ({ ctx, data }) => (
  <Layout ctx={ctx} title={`Correspondence ${data.correspondenceId}`} section="inbox">
    <p>
      <a href={urls.inbox({ correspondence: data.correspondenceId })}>Its events in the inbox</a>
    </p>
    <section aria-labelledby="events">
      <h2 id="events">Events, in the order of their time (at)</h2>
      {data.more && <p class="note">Only the latest received events are shown; the inbox link above pages through all of them.</p>}
      {data.events.length === 0 ? (
        <p>No event in the inbox names this correspondence.</p>
      ) : (
        <ol class="timeline">
          {data.events.map((e) => (
            <li class={`source-${e.source === 'reconciler' ? 'reconciler' : 'webhook'}`}>
              <span class="time">{when(e.occurred_at ?? e.received_at)}</span> <a href={urls.event(e.event_id)}>{visible(e.type)}</a>{' '}
              <Status value={e.status} /> {e.source === 'reconciler' ? <span class="tag">synthesised by the reconciler</span> : ''}{' '}
              <span class="gist">{masked(gist(e))}</span> <span class="id">{visible(e.event_id)}</span>
            </li>
          ))}
        </ol>
      )}
    </section>
    <section aria-labelledby="rereads">
      <h2 id="rereads">Re-reads by the reconciler</h2>
      {data.explanations.length === 0 ? (
        <p>No re-read of this correspondence found a difference.</p>
      ) : (
        <ExplanationTable rows={data.explanations} caption="Each difference a re-read found, and what was written for it" />
      )}
    </section>
    <section aria-labelledby="cgaps">
      <h2 id="cgaps">Gaps</h2>
      {data.gaps.length === 0 ? (
        <p>No gap names this correspondence.</p>
      ) : (
        <GapTable gaps={data.gaps} caption="Gaps whose delivery named it" />
      )}
    </section>
    <section aria-labelledby="state">
      <h2 id="state">State</h2>
      <div class="side-by-side">
        <div>
          <h3>As postroom’s events describe it</h3>
          {data.projection ? <ProjectionFacts p={data.projection} label="Projection" /> : <p>No projection yet.</p>}
        </div>
        <div>
          <h3>As the service last showed it</h3>
          {data.service ? (
            <ServiceFacts s={data.service} />
          ) : (
            <p class="note">
              No re-read yet: the reconciler stores the service’s answer each time it re-reads this correspondence. Compare now with{' '}
              <code>postroom correspondence show</code> and the service’s API.
            </p>
          )}
        </div>
      </div>
      {data.service && <Differences rows={data.differences} />}
    </section>
  </Layout>
);
