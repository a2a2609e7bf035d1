import { Router } from 'express';
import { z } from 'zod';
import { recipientSchema, type RecipientInput } from '../addressing.js';
import { decodeChangeCursor, encodeChangeCursor, type ChangeLog } from '../change-log.js';
import type { CorrespondenceService } from '../correspondence.js';
import { createDocument, documentOn, documentView } from '../documents.js';
import { apiErrors } from '../errors.js';
import type { IdempotencyStore } from '../idempotency.js';
import type { IdFactory } from '../ids.js';
import { keyAccess, type ApiKeyView, type Caller, type KeyStore } from '../keys.js';
import { correspondenceView, type Correspondence, type SandboxState } from '../state.js';
import type { Clock } from '../../clock.js';
import { SCOPES } from '../catalogue.js';
import { operation, parseBody, parseLimit, queryParam } from './http.js';

export interface ApiRouteDeps {
  state: SandboxState;
  keys: KeyStore;
  correspondence: CorrespondenceService;
  changes: ChangeLog;
  idempotency: IdempotencyStore;
  ids: IdFactory;
  clock: Clock;
  organization: { id: string; name: string };
  /** Sends to more recipients than this are queued (202). */
  queuedSendThreshold: number;
}

const documentSchema = z.object({
  filename: z.string({ error: 'required, a string' }).min(1).max(255),
  media_type: z.string({ error: 'required, a MIME type' }).regex(/^[\w.+-]+\/[\w.+-]+$/, 'expected a MIME type such as application/pdf'),
  content_base64: z.string({ error: 'required, the file bytes in base64' }).min(1, 'the document is empty'),
});

const MAX_RECIPIENTS = 1000;

const correspondenceSchema = z.object({
  kind: z.string({ error: 'required, a string' }).min(1).max(64),
  subject: z.string({ error: 'required, a string' }).min(1).max(500),
  content_type: z.string({ error: 'required, a string' }).min(1).max(200),
  document_ids: z.array(z.string().min(1).max(100)).max(100).default([]),
  recipients: z
    .array(recipientSchema, { error: 'required, an array of recipients' })
    .min(1, 'at least one recipient')
    .max(MAX_RECIPIENTS, `at most ${MAX_RECIPIENTS} recipients per request`),
});

const planRunSchema = z.object({
  kind: z.string().min(1).max(64).optional(),
  subject: z.string().min(1).max(500).optional(),
  content_type: z.string().min(1).max(200).optional(),
  document_ids: z.array(z.string().min(1).max(100)).max(100).optional(),
  recipients: z.array(recipientSchema).min(1).max(MAX_RECIPIENTS).optional(),
});

const rotateKeySchema = z.object({
  grace_seconds: z
    .number({ error: 'expected whole seconds' })
    .int('expected whole seconds')
    .min(0)
    .max(604_800, 'at most 604800 (7 days)')
    .default(0),
});

const PLAN_ID = /^[A-Za-z0-9_.-]{1,100}$/;
export const LISTING_LIMITS = { default: 50, max: 200 } as const;
const ISO_TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/i;

/** An ISO 8601 date-time with a zone, as epoch ms; a date that does not exist (2026-02-31) is refused, not rolled over. */
function parseTimestamp(name: string, raw: string): number {
  const m = ISO_TIMESTAMP.exec(raw);
  const ms = m ? Date.parse(raw) : NaN;
  const [, y, mo, d, h, mi, s] = m ?? [];
  const daysInMonth = new Date(Date.UTC(Number(y), Number(mo), 0)).getUTCDate();
  if (
    Number.isNaN(ms) ||
    Number(mo) < 1 ||
    Number(mo) > 12 ||
    Number(d) < 1 ||
    Number(d) > daysInMonth ||
    Number(h) > 23 ||
    Number(mi) > 59 ||
    Number(s ?? 0) > 59
  ) {
    throw apiErrors.invalid(name, 'expected an ISO 8601 timestamp with a zone, such as 2026-03-01T09:00:00Z');
  }
  return ms;
}
const SEND_MODE_HEADER = 'x-sandbox-send-mode';

function createdBody(c: Correspondence): Record<string, unknown> {
  const v = correspondenceView(c);
  return {
    correspondence_id: v.correspondence_id,
    kind: v.kind,
    subject: v.subject,
    content_type: v.content_type,
    document_ids: v.document_ids,
    status: v.status,
    created_at: v.created_at,
    participants: v.participants.map((p) => ({ participant_id: p.participant_id, ref: p.ref, state: p.state })),
  };
}

/** GET /me, documents, correspondence, plan runs, API keys. */
export function createApiRouter(deps: ApiRouteDeps): Router {
  const r = Router();
  const idem = { idempotency: deps.idempotency };
  meRoute(r, deps);
  documentRoutes(r, deps, idem);
  correspondenceRoutes(r, deps, idem);
  planRunRoute(r, deps, idem);
  apiKeyRoutes(r, deps, idem);
  return r;
}

type Idempotent = { idempotency: ApiRouteDeps['idempotency'] };

function meRoute(r: Router, deps: ApiRouteDeps): void {
  r.get(
    '/me',
    operation(null, (_req, caller) => ({
      status: 200,
      body: {
        organization_id: deps.organization.id,
        organization_name: deps.organization.name,
        plane: caller.plane,
        tier: 'standard',
        approved: true,
        scopes: SCOPES.filter((s) => caller.scopes.has(s)),
      },
    })),
  );
}

function documentRoutes(r: Router, deps: ApiRouteDeps, idem: Idempotent): void {
  r.post(
    '/documents',
    operation(
      'documents.write',
      (req, caller) => {
        const body = parseBody(documentSchema, req.body);
        const doc = createDocument(deps, body, caller.plane);
        return { status: 201, body: { document_id: doc.documentId, filename: doc.filename, size_bytes: doc.sizeBytes } };
      },
      idem,
    ),
  );
  r.get(
    '/documents/:document_id',
    operation('documents.read', (req, caller) => {
      const doc = documentOn(deps.state, String(req.params.document_id), caller.plane);
      if (!doc) throw apiErrors.notFound('document', String(req.params.document_id));
      return { status: 200, body: documentView(doc) };
    }),
  );
}

function correspondenceRoutes(r: Router, deps: ApiRouteDeps, idem: Idempotent): void {
  const sendMode = (raw: string | string[] | undefined, recipients: number): boolean => {
    if (raw === undefined) return recipients > deps.queuedSendThreshold;
    if (raw === 'queued') return true;
    if (raw === 'direct') return false;
    throw apiErrors.invalid('X-Sandbox-Send-Mode', 'expected queued or direct');
  };

  r.post(
    '/correspondence',
    operation(
      'correspondence.write',
      (req, caller) => {
        const body = parseBody(correspondenceSchema, req.body);
        const queued = sendMode(req.headers[SEND_MODE_HEADER], body.recipients.length);
        const c = deps.correspondence.create(body, { plane: caller.plane, queued });
        return { status: queued ? 202 : 201, body: createdBody(c) };
      },
      idem,
    ),
  );
  // The reconciler's listing. The spec names correspondence.read operations but shows none: this shape
  // is the sandbox's assumption (docs/sandbox.md). Ascending by each plane's change sequence; a change
  // moves the file to the end, so a walk resuming from its cursor has no holes and no repeats.
  r.get(
    '/correspondence',
    operation('correspondence.read', (req, caller) => {
      const limit = parseLimit(req, LISTING_LIMITS);
      const since = queryParam(req, 'updated_since');
      const cursor = queryParam(req, 'cursor');
      const updatedSince = since === undefined ? undefined : parseTimestamp('updated_since', since);
      const afterSeq = cursor === undefined ? 0 : decodeChangeCursor(cursor, caller.plane);
      const { items, more } = deps.changes.page(caller.plane, { afterSeq, updatedSince, limit });
      const last = items[items.length - 1];
      return {
        status: 200,
        body: {
          correspondence: items.map(correspondenceView),
          next_cursor: more && last ? encodeChangeCursor(caller.plane, last.changeSeq) : null,
        },
      };
    }),
  );
  r.get(
    '/correspondence/:correspondence_id',
    operation('correspondence.read', (req, caller) => ({
      status: 200,
      body: correspondenceView(deps.correspondence.getOn(String(req.params.correspondence_id), caller.plane)),
    })),
  );
}

function planRunRoute(r: Router, deps: ApiRouteDeps, idem: Idempotent): void {
  r.post(
    '/plans/:plan_id/runs',
    operation(
      'correspondence.write',
      (req, caller) => {
        const planId = String(req.params.plan_id);
        if (!PLAN_ID.test(planId)) throw apiErrors.invalid('plan_id', 'expected 1 to 100 letters, digits, ".", "_" or "-"');
        const body = parseBody(planRunSchema, req.body);
        // Plans live in the portal; a run without recipients sends to one synthetic, deliverable recipient.
        const recipients: RecipientInput[] = body.recipients ?? [
          { addressing: { type: 'nin', nin: '10000000000' }, display_name: 'Plan Recipient', ref: `plan-${planId}` },
        ];
        const c = deps.correspondence.create(
          {
            kind: body.kind ?? 'plan',
            subject: body.subject ?? `Run of plan ${planId}`,
            content_type: body.content_type ?? 'text/plain',
            document_ids: body.document_ids ?? [],
            recipients,
          },
          { plane: caller.plane, queued: true, planId },
        );
        return {
          status: 202,
          body: { run_id: deps.ids.next('run'), plan_id: planId, correspondence_id: c.correspondenceId, status: 'queued' },
        };
      },
      idem,
    ),
  );
}

function apiKeyRoutes(r: Router, deps: ApiRouteDeps, idem: Idempotent): void {
  /** The key, if the caller may reach it: 404 for unknown ids and keys of the other plane, 403 for wider ones. */
  const reachableKey = (caller: Caller, keyId: string): ApiKeyView => {
    const k = deps.keys.get(keyId);
    const access = k ? keyAccess(caller, k) : undefined;
    if (!k || !access || (!access.ok && access.reason === 'other_plane')) throw apiErrors.notFound('API key', keyId);
    if (!access.ok && access.reason === 'wider') throw apiErrors.widerKey(access.missingScope);
    return k;
  };

  r.get(
    '/api-keys',
    operation('apikeys.read', (_req, caller) => ({
      status: 200,
      body: { api_keys: deps.keys.list().filter((k) => keyAccess(caller, k).ok), next_cursor: null },
    })),
  );
  r.get(
    '/api-keys/:key_id',
    operation('apikeys.read', (req, caller) => ({ status: 200, body: reachableKey(caller, String(req.params.key_id)) })),
  );
  r.post(
    '/api-keys/:key_id/rotate',
    operation(
      'apikeys.write',
      (req, caller) => {
        const { grace_seconds } = parseBody(rotateKeySchema, req.body);
        const keyId = String(req.params.key_id);
        reachableKey(caller, keyId);
        const rotated = deps.keys.rotate(keyId, grace_seconds);
        if (!rotated) throw apiErrors.notFound('API key', keyId);
        return { status: 200, body: { ...rotated.view, secret: rotated.secret, previous_secret_expires_at: rotated.previousExpiresAt } };
      },
      idem,
    ),
  );
  r.delete(
    '/api-keys/:key_id',
    operation('apikeys.write', (req, caller) => {
      const keyId = String(req.params.key_id);
      reachableKey(caller, keyId);
      return { status: 200, body: deps.keys.revoke(keyId)! };
    }),
  );
}
