import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The public API, name by name. etc/*.api.md is what API Extractor reads from the
 * declarations each entry point exports (`npm run lint` fails when a report is out of
 * date); these lists make adding a name to it a decision taken here, in review, and
 * the bounds keep the surface one a reviewer reads in one sitting.
 */

/** `postroom`: what an application embedding postroom calls, and the types those calls take and return. */
const POSTROOM = [
  // Handlers, the worker and receiving.
  'createPostroom',
  'Postroom',
  'PostroomOptions',
  'PostroomRouterOptions',
  'HandlerContext',
  'HandlerMap',
  'EventHandler',
  'UnknownEventHandler',
  'EveryEventHandler',
  'InboxSource',
  'WorkerOptions',
  'BackoffPolicy',
  'EventError',
  'EventErrorCode',
  'EventErrorContext',
  'OnErrorHook',
  'SecretProvider',
  'SecretSet',
  'captureRawBody',
  'createClosingServer',
  'ClosingServer',
  'replayEvent',
  // Events.
  'EVENT_CATALOGUE',
  'EventCatalogue',
  'EventType',
  'EventData',
  'KnownFields',
  'PostroomEvent',
  'AnyKnownEvent',
  'UnknownEvent',
  // Verifying and signing.
  'constructEvent',
  'ConstructEventOptions',
  'WebhookHeaders',
  'WebhookVerificationError',
  'WebhookVerificationCode',
  'sign',
  'SignOptions',
  'SignedPayloadScheme',
  // The projection.
  'ProjectedCorrespondence',
  'ProjectionDifference',
  'ServiceCorrespondence',
  'SendSummary',
  // The store.
  'Db',
  'Queryable',
  'QueryResult',
  'createPgDb',
  'PgDbOptions',
  'createPgliteDb',
  'PgliteDbOptions',
  'migrate',
  // Errors.
  'PostroomError',
  'ConfigError',
  'StoreUnavailableError',
  'HandlerInterruptedError',
  'HandlerTimeoutError',
  'HandlerTransactionClosedError',
  // Logging and metrics.
  'createLogger',
  'LoggerOptions',
  'createMetrics',
  'MetricsOptions',
  'PostroomMetrics',
];

/** `postroom/service`: the service's API client, the shapes it sends and receives, and reconciliation through it. */
const SERVICE = [
  // The client.
  'createApiClient',
  'ApiClient',
  'ApiClientOptions',
  'ApiError',
  'ApiErrorCode',
  // The service's /sender/v2 shapes.
  'CallOptions',
  'ChangedCorrespondence',
  'Correspondence',
  'CorrespondenceParticipant',
  'CreateCorrespondenceInput',
  'CreateEndpointInput',
  'CreatedCorrespondence',
  'DeliveryStatus',
  'IdempotentCallOptions',
  'ListChangedParams',
  'ListDeliveriesParams',
  'OrganisationCaller',
  'Page',
  'PageParams',
  'Participant',
  'Plane',
  'PlanRunResult',
  'Recipient',
  'RotateApiKeyInput',
  'RotatedApiKey',
  'RotatedEndpointSecret',
  'SendSummary',
  'UpdateEndpointInput',
  'UploadDocumentInput',
  'UploadedDocument',
  'WebhookDelivery',
  'WebhookEndpoint',
  'WebhookEndpointWithSecret',
  // Reconciliation and the audit.
  'createReconciler',
  'Reconciler',
  'ReconcilerDeps',
  'ReconcileOptions',
  'ReconcileProgress',
  'ReconcileSummary',
  'RunResult',
  'auditDelivered',
  'AuditResult',
  'recordSentCorrespondence',
  // What those signatures take from `postroom`, named again.
  'BackoffPolicy',
  'Db',
  'Queryable',
  'QueryResult',
  'PostroomError',
  'PostroomMetrics',
];

/** `postroom/sandbox`: what a test or a developer starts and drives a sandbox with. */
const SANDBOX = [
  'startSandbox',
  'createSandbox',
  'Sandbox',
  'SandboxOptions',
  'SandboxControl',
  'EventSummary',
  'CorrespondenceView',
  'EndpointView',
  'DeliveryRecord',
  'Addressing',
  'FaultConfig',
  'FailureWindow',
  'FaultLogEntry',
  'EVENT_TYPES',
  'SUBSCRIBABLE_EVENT_TYPES',
  'EventType',
  'SCOPES',
  'Scope',
  'ParticipantAct',
  'Plane',
  'DeliveryStatus',
  'startTraffic',
  'TrafficOptions',
  'TrafficRun',
  'TrafficCounters',
  'TrafficOp',
];

interface Report {
  /** Names the entry point exports. */
  exported: string[];
  /** Names exported inside each `export * as` namespace. */
  namespaces: Record<string, string[]>;
}

function report(file: string): Report {
  const text = fs.readFileSync(path.join(process.cwd(), 'etc', file), 'utf8');
  const exported = [...text.matchAll(/^export (?:declare )?(?:abstract )?(?:class|interface|type|function|const|enum) (\w+)/gm)].map(
    (m) => m[1]!,
  );
  const namespaces: Record<string, string[]> = {};
  // API Extractor writes the reports with CRLF line ends.
  for (const m of text.matchAll(/^declare namespace (\w+) \{\r?\n {4}export \{\r?\n([^}]*)\}/gm)) {
    namespaces[m[1]!] = m[2]!.split(',').map((name) => name.trim());
  }
  return { exported, namespaces };
}

const sorted = (names: readonly string[]): string[] => [...names].sort();

describe('the public API', () => {
  it('postroom exports these names', () => {
    const { exported, namespaces } = report('postroom.api.md');
    expect(sorted(exported)).toEqual(sorted(POSTROOM));
    expect(namespaces).toEqual({});
  });

  it('postroom/service exports these names', () => {
    const { exported, namespaces } = report('postroom-service.api.md');
    expect(sorted(exported)).toEqual(sorted(SERVICE));
    expect(namespaces).toEqual({});
  });

  it('postroom/sandbox exports these names', () => {
    const { exported, namespaces } = report('postroom-sandbox.api.md');
    expect(sorted(exported)).toEqual(sorted(SANDBOX));
    expect(namespaces).toEqual({});
  });

  it('stays small enough to read in one sitting', () => {
    // A little room above today's counts; passing a bound is a question of design, not an edit to a list.
    expect(POSTROOM.length).toBeLessThanOrEqual(66);
    expect(SERVICE.length).toBeLessThanOrEqual(54);
    expect(SANDBOX.length).toBeLessThanOrEqual(28);
  });

  it('the modules export at run time exactly the values the reports list', async () => {
    const values = (text: string): string[] =>
      [...text.matchAll(/^export (?:declare )?(?:abstract )?(?:class|function|const|enum) (\w+)/gm)].map((m) => m[1]!);
    const read = (file: string): string => fs.readFileSync(path.join(process.cwd(), 'etc', file), 'utf8');
    expect(sorted(Object.keys(await import('../../src/index.js')))).toEqual(sorted(values(read('postroom.api.md'))));
    expect(sorted(Object.keys(await import('../../src/service.js')))).toEqual(sorted(values(read('postroom-service.api.md'))));
    expect(sorted(Object.keys(await import('../../src/sandbox/index.js')))).toEqual(sorted(values(read('postroom-sandbox.api.md'))));
  });
});
