import { isPostroomError } from '../errors.js';
import { FilterError, inboxQueryOf, parseId, readInboxQuery, replayFilter } from './filters.js';
import { field, redirect } from './http.js';
import { findRoute, message, type RouterDeps, type Routes, type SignedIn } from './routing.js';
import { urls } from './urls.js';

/** How long a reveal lasts in the session that asked for it. */
const REVEAL_MS = 10 * 60_000;

/** Refusals an action reports back to the operator on the page it came from, instead of failing the request. */
const TOLD_TO_OPERATOR = ['not_found', 'replay_refused', 'replay_conflict'];

/** An operator's POST, its form already checked for the session's CSRF token. */
type Action = (deps: RouterDeps, x: SignedIn, form: URLSearchParams) => Promise<void>;

/** After an action: its sentence shown once on the next page, and a 303 to that page (a reload does not repeat it). */
function done(x: SignedIn, to: string, sentence: string): void {
  x.session.flash = sentence;
  redirect(x.res, to, x.cookies);
}

async function replayOne(deps: RouterDeps, x: SignedIn): Promise<void> {
  const id = x.parts[1]!;
  return done(x, urls.event(id), await deps.actions.replayOne(x.session.identity, id));
}

/** Recorded in the audit log before this session may see the event's personal data. */
async function reveal(deps: RouterDeps, x: SignedIn): Promise<void> {
  const id = x.parts[1]!;
  await deps.actions.reveal(x.session.identity, id);
  x.session.revealed.set(id, deps.clock.now() + REVEAL_MS);
  return done(x, urls.event(id), 'Personal data of this event is shown for the next 10 minutes; the reveal is in the audit log.');
}

/** `expected`: how many the confirmation page showed, kept in the audit record beside how many it took. */
async function replayFiltered(deps: RouterDeps, x: SignedIn, form: URLSearchParams): Promise<void> {
  const query = readInboxQuery(form);
  const { filter, description } = replayFilter(query, deps.clock.now());
  const expected = form.get('expected');
  const sentence = await deps.actions.replayFiltered(
    x.session.identity,
    filter,
    description,
    expected === null ? undefined : Number(expected),
  );
  return done(x, urls.inbox(inboxQueryOf(query)), sentence);
}

async function ignoreGap(deps: RouterDeps, x: SignedIn, form: URLSearchParams): Promise<void> {
  const id = parseId(x.parts[1]);
  const reason = field(form, 'reason', 500);
  if (id === undefined || reason === undefined || reason.length < 3)
    return done(x, urls.gap(x.parts[1]!), 'Say why the gap needs no recovery, in a few words.');
  return done(x, urls.gap(id), await deps.actions.ignoreGap(x.session.identity, id, reason));
}

async function reconcileNow(deps: RouterDeps, x: SignedIn): Promise<void> {
  return done(x, urls.runs(), await deps.actions.reconcileNow(x.session.identity));
}

const ACTIONS: Routes<Action> = {
  '/events/:id/replay': replayOne,
  '/events/:id/reveal': reveal,
  '/replay': replayFiltered,
  '/gaps/:id/ignore': ignoreGap,
  '/reconcile': reconcileNow,
};

/** An operator's action at its path, or 404; a refusal is told on the page the operator is sent back to. */
export async function runAction(deps: RouterDeps, x: SignedIn, form: URLSearchParams): Promise<void> {
  const action = findRoute(ACTIONS, x.parts);
  try {
    if (action) return await action(deps, x, form);
  } catch (err) {
    if (err instanceof FilterError) return done(x, urls.inbox(), err.message);
    if (isPostroomError(err) && TOLD_TO_OPERATOR.includes(err.code))
      return done(x, x.parts[0] === 'events' ? urls.event(x.parts[1]!) : urls.overview(), err.message);
    throw err;
  }
  return x.page(404, message('Not found', 'No such action.'));
}
