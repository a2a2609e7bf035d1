import type { FC } from 'hono/jsx';
import type { ConsoleAuditRow } from '../audit-queries.js';
import { count, masked, visible, when } from '../text.js';
import { urls } from '../urls.js';
import { Csrf, Layout, type PageContext } from './layout.js';

export const Login: FC<{ ctx: PageContext; next: string | undefined; failed: boolean; proxyOnly: boolean }> = ({
  ctx,
  next,
  failed,
  proxyOnly,
}) => (
  <Layout ctx={ctx} title="Log in" section="none">
    {proxyOnly ? (
      <p>This console trusts the proxy in front of it to say who you are, and it did not. Open the console through that proxy.</p>
    ) : (
      <form method="post" action={urls.login()} class="stack">
        {failed && (
          <p class="error" role="alert">
            That token is not valid here.
          </p>
        )}
        <input type="hidden" name="next" value={next ?? ''} />
        <label for="token">Console token</label>
        <input id="token" name="token" type="password" required autocomplete="current-password" maxlength={512} />
        <small class="hint">A line of the tokens file gives a name, a role (viewer or operator) and its token.</small>
        <button type="submit">Log in</button>
      </form>
    )}
  </Layout>
);

export const Message: FC<{ ctx: PageContext; title: string; text: string }> = ({ ctx, title, text }) => (
  <Layout ctx={ctx} title={title} section="none">
    <p>{visible(text)}</p>
    <p>
      <a href={urls.overview()}>Back to the overview</a>
    </p>
  </Layout>
);

export interface ReplayPreview {
  filters: Record<string, string | undefined>;
  description: string;
  matched: number;
}

export const ReplayConfirm: FC<{ ctx: PageContext; preview: ReplayPreview }> = ({ ctx, preview }) => (
  <Layout ctx={ctx} title="Replay events" section="inbox">
    <p>
      <strong>{count(preview.matched)}</strong> {visible(preview.description)} would run again: attempts start from zero, and the previous
      outcome is kept in each event’s last error. Quarantined events are validated again first; those still invalid stay quarantined.
    </p>
    {preview.matched > 0 ? (
      <form method="post" action={urls.replay()} data-confirm={`Replay ${preview.matched} event(s)?`}>
        <Csrf ctx={ctx} />
        {Object.entries(preview.filters).map(([k, v]) => (v === undefined ? null : <input type="hidden" name={k} value={v} />))}
        <input type="hidden" name="expected" value={String(preview.matched)} />
        <button type="submit">{`Replay ${count(preview.matched)} event${preview.matched === 1 ? '' : 's'}`}</button>{' '}
        <a href={urls.inbox(preview.filters)}>Cancel</a>
      </form>
    ) : (
      <p>
        <a href={urls.inbox(preview.filters)}>Back to the inbox</a>
      </p>
    )}
  </Layout>
);

export const AuditLog: FC<{ ctx: PageContext; rows: ConsoleAuditRow[]; next: number | undefined; paged: boolean }> = ({
  ctx,
  rows,
  next,
  paged,
}) => (
  <Layout ctx={ctx} title="Audit log" section="audit">
    <p>
      Every action taken in the console, and every reveal of personal data. Also on the command line: <code>postroom console audit</code>.
    </p>
    {rows.length === 0 ? (
      <p>Nothing recorded yet.</p>
    ) : (
      <table>
        <caption>Actions, newest first</caption>
        <thead>
          <tr>
            <th scope="col">when</th>
            <th scope="col">who</th>
            <th scope="col">role</th>
            <th scope="col">action</th>
            <th scope="col">target</th>
            <th scope="col">how many</th>
            <th scope="col">detail</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr>
              <td class="time">{when(r.at)}</td>
              <td>{`${visible(r.actor)} (${visible(r.via)})`}</td>
              <td>{visible(r.role)}</td>
              <td>{visible(r.action)}</td>
              <td class="id">{visible(r.target)}</td>
              <td class="num">{r.affected === null ? '' : count(r.affected)}</td>
              <td>{masked(JSON.stringify(r.detail))}</td>
            </tr>
          ))}
        </tbody>
      </table>
    )}
    <nav class="pager" aria-label="Pages">
      {paged && <a href={urls.audit()}>Newest</a>}
      {next !== undefined && (
        <a href={urls.audit({ before: next })} rel="next">
          Older entries
        </a>
      )}
    </nav>
  </Layout>
);
