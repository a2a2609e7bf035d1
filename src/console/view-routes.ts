import { pageInbox, type InboxPage } from '../inbox/browse-queries.js';
import { countReplayable } from '../inbox/admin-queries.js';
import { getInboxEvent } from '../inbox/read-queries.js';
import { GAP_STATUSES, getGap, pageGaps, type GapStatus } from '../reconciler/gap-queries.js';
import { getRun, listRuns } from '../reconciler/state-queries.js';
import { listAudit } from './audit-queries.js';
import { FilterError, inboxQueryOf, parseCursor, parseId, readInboxQuery, replayFilter, toBrowseFilter } from './filters.js';
import { field, redirect } from './http.js';
import { loadEvent, loadOverview, loadTimeline } from './pages.js';
import { findRoute, h, message, type RouterDeps, type Routes, type SignedIn } from './routing.js';
import { urls } from './urls.js';
import { Timeline } from './views/correspondence.js';
import { EventView } from './views/event.js';
import { Inbox } from './views/inbox.js';
import { Overview } from './views/overview.js';
import { AuditLog, ReplayConfirm } from './views/pages.js';
import { GapView, Gaps, RunView, Runs } from './views/reconcile.js';

/** Rows shown on one page of a listing. */
const PAGE = 50;

type View = (deps: RouterDeps, x: SignedIn) => Promise<void>;

const notFound = (x: SignedIn, text: string): Promise<void> => x.page(404, message('Not found', text));

async function overview(deps: RouterDeps, x: SignedIn): Promise<void> {
  const data = await loadOverview(deps.db, deps.clock, deps.panels, deps.reconcileUnavailable);
  return x.page(200, (ctx) => h(Overview, { ctx, data }));
}

/** A filter the inbox cannot use is said above an empty listing (400), the form keeping what was typed. */
async function inbox(deps: RouterDeps, x: SignedIn): Promise<void> {
  const q = x.url.searchParams;
  const query = readInboxQuery(q);
  const empty: InboxPage = { rows: [], next: null, scanned: 0, windowFull: false };
  let error: string | undefined;
  let result = empty;
  const before = field(q, 'before', 400);
  try {
    result = await pageInbox(deps.db, toBrowseFilter(query, deps.clock.now()), parseCursor(before), PAGE);
  } catch (err) {
    if (!(err instanceof FilterError)) throw err;
    error = err.message;
  }
  return x.page(error ? 400 : 200, (ctx) => h(Inbox, { ctx, query, page: result, error, paged: before !== undefined }));
}

/** Personal data shown unmasked only to an operator who revealed this event in this session, for a while. */
async function event(deps: RouterDeps, x: SignedIn): Promise<void> {
  const id = x.parts[1]!;
  const until = x.session.revealed.get(id);
  const revealed = until !== undefined && until > deps.clock.now() && x.session.identity.role === 'operator';
  const data = await loadEvent(deps.db, id, { revealed, holdSeconds: deps.orderingHoldSeconds, now: deps.clock.now() });
  if (!data) return notFound(x, `No event ${id} in the inbox.`);
  return x.page(200, (ctx) => h(EventView, { ctx, data }));
}

async function correspondence(deps: RouterDeps, x: SignedIn): Promise<void> {
  const data = await loadTimeline(deps.db, x.parts[1]!);
  return x.page(200, (ctx) => h(Timeline, { ctx, data }));
}

async function gaps(deps: RouterDeps, x: SignedIn): Promise<void> {
  const q = x.url.searchParams;
  const raw = field(q, 'status');
  const status = raw !== undefined && (GAP_STATUSES as readonly string[]).includes(raw) ? (raw as GapStatus) : undefined;
  const before = parseId(field(q, 'before'));
  const rows = await pageGaps(deps.db, { status, before, limit: PAGE + 1 });
  const next = rows.length > PAGE ? rows[PAGE - 1]!.gap_id : undefined;
  return x.page(200, (ctx) => h(Gaps, { ctx, status, gaps: rows.slice(0, PAGE), next, paged: before !== undefined }));
}

async function gap(deps: RouterDeps, x: SignedIn): Promise<void> {
  const id = parseId(x.parts[1]);
  const found = id === undefined ? undefined : await getGap(deps.db, String(id));
  if (!found) return notFound(x, `No gap ${x.parts[1]}.`);
  return x.page(200, (ctx) => h(GapView, { ctx, gap: found }));
}

async function runs(deps: RouterDeps, x: SignedIn): Promise<void> {
  const before = parseId(field(x.url.searchParams, 'before'));
  const rows = await listRuns(deps.db, { before, limit: PAGE + 1 });
  const next = rows.length > PAGE ? rows[PAGE - 1]!.run_id : undefined;
  return x.page(200, (ctx) =>
    h(Runs, { ctx, runs: rows.slice(0, PAGE), next, paged: before !== undefined, unavailable: deps.reconcileUnavailable }),
  );
}

async function run(deps: RouterDeps, x: SignedIn): Promise<void> {
  const id = parseId(x.parts[1]);
  const found = id === undefined ? undefined : await getRun(deps.db, id);
  if (!found) return notFound(x, `No reconcile run ${x.parts[1]}.`);
  return x.page(200, (ctx) => h(RunView, { ctx, run: found }));
}

async function audit(deps: RouterDeps, x: SignedIn): Promise<void> {
  const before = parseId(field(x.url.searchParams, 'before'));
  const rows = await listAudit(deps.db, { before, limit: PAGE + 1 });
  const next = rows.length > PAGE ? rows[PAGE - 1]!.audit_id : undefined;
  return x.page(200, (ctx) => h(AuditLog, { ctx, rows: rows.slice(0, PAGE), next, paged: before !== undefined }));
}

/** What a filtered replay would take, counted, before the operator confirms it (the POST is in action-routes.ts). */
async function replayConfirm(deps: RouterDeps, x: SignedIn): Promise<void> {
  const query = readInboxQuery(x.url.searchParams);
  const { filter, description } = replayFilter(query, deps.clock.now());
  const matched = await countReplayable(deps.db, filter);
  return x.page(200, (ctx) => h(ReplayConfirm, { ctx, preview: { filters: inboxQueryOf(query), description, matched } }));
}

/** The header's search box: an event id goes to the event, anything else to the correspondence of that id. */
async function find(deps: RouterDeps, x: SignedIn): Promise<void> {
  const wanted = field(x.url.searchParams, 'q');
  if (wanted === undefined) return redirect(x.res, urls.inbox(), x.cookies);
  if (await getInboxEvent(deps.db, wanted)) return redirect(x.res, urls.event(wanted), x.cookies);
  return redirect(x.res, urls.correspondence(wanted), x.cookies);
}

const VIEWS: Routes<View> = {
  '/': overview,
  '/inbox': inbox,
  '/events/:id': event,
  '/correspondence/:id': correspondence,
  '/gaps': gaps,
  '/gaps/:id': gap,
  '/runs': runs,
  '/runs/:id': run,
  '/audit': audit,
  '/replay': replayConfirm,
  '/find': find,
};

/** A GET by a logged-in session: its view, a 400 page for a filter the view cannot use, or 404. */
export async function showView(deps: RouterDeps, x: SignedIn): Promise<void> {
  const view = findRoute(VIEWS, x.parts);
  try {
    if (view) return await view(deps, x);
  } catch (err) {
    if (err instanceof FilterError) return x.page(400, message('Bad request', err.message));
    throw err;
  }
  return notFound(x, 'No such page.');
}
