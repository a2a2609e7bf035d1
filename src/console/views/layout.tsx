import type { Child, FC, PropsWithChildren } from 'hono/jsx';
import type { Identity } from '../auth/tokens.js';
import { visible } from '../text.js';
import { urls } from '../urls.js';

/** What every page knows about the request: who is looking, the session's CSRF token, a message to show once. */
export interface PageContext {
  identity: Identity | undefined;
  csrf: string | undefined;
  flash: string | undefined;
  assetVersion: string;
}

export type Section = 'overview' | 'inbox' | 'gaps' | 'runs' | 'audit' | 'none';

const NAV: Array<[Section, string, string]> = [
  ['overview', 'Overview', urls.overview()],
  ['inbox', 'Inbox', urls.inbox()],
  ['gaps', 'Gaps', urls.gaps({ status: 'open' })],
  ['runs', 'Reconcile runs', urls.runs()],
  ['audit', 'Audit log', urls.audit()],
];

export const Layout: FC<PropsWithChildren<{ ctx: PageContext; title: string; section: Section }>> = ({ ctx, title, section, children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="referrer" content="no-referrer" />
      <title>{`${visible(title)} · postroom console`}</title>
      <link rel="stylesheet" href={urls.asset('console.css', ctx.assetVersion)} />
      <script src={urls.asset('console.js', ctx.assetVersion)} defer></script>
    </head>
    <body>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={urls.overview()}>
          postroom console
        </a>
        {ctx.identity && (
          <nav aria-label="Views">
            <ul>
              {NAV.map(([key, label, href]) => (
                <li>
                  <a href={href} aria-current={key === section ? 'page' : undefined}>
                    {label}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
        )}
        {ctx.identity && (
          <form class="find" method="get" action={urls.find()} role="search">
            <label for="find-q">Event or correspondence id</label>
            <input id="find-q" name="q" type="search" maxlength={256} autocomplete="off" />
            <button type="submit">Find</button>
          </form>
        )}
        {ctx.identity && (
          <form class="who" method="post" action={urls.logout()}>
            <span>
              {visible(ctx.identity.name)} <span class={`role role-${ctx.identity.role}`}>{ctx.identity.role}</span>
            </span>
            <Csrf ctx={ctx} />
            <button type="submit">Log out</button>
          </form>
        )}
      </header>
      <main id="main" tabindex={-1}>
        {ctx.flash && (
          <p class="flash" role="status">
            {visible(ctx.flash)}
          </p>
        )}
        <h1>{visible(title)}</h1>
        {children}
      </main>
    </body>
  </html>
);

/** The hidden field every POST form carries (refused without it: src/console/router.ts). */
export const Csrf: FC<{ ctx: PageContext }> = ({ ctx }) => <input type="hidden" name="_csrf" value={ctx.csrf ?? ''} />;

/** A definition list of label/value pairs, values shown as text. */
export const Facts: FC<{ items: Array<[string, Child]>; label?: string }> = ({ items, label }) => (
  <dl class="facts" aria-label={label}>
    {items.map(([k, v]) => (
      <>
        <dt>{k}</dt>
        <dd>{v}</dd>
      </>
    ))}
  </dl>
);

/** A status as a labelled badge; the text is the status itself. */
export const Status: FC<{ value: string | null | undefined }> = ({ value }) => (
  <span class={`status status-${/^[a-z_]{1,20}$/.test(value ?? '') ? value : 'other'}`}>{visible(value ?? '')}</span>
);

export const isOperator = (ctx: PageContext): boolean => ctx.identity?.role === 'operator';
