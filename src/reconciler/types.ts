import type { Correspondence, ListDeliveriesParams, Page, WebhookDelivery, WebhookEndpoint } from '../client/types.js';

/** The part of the API client the reconciler uses; the real client satisfies it. */
export interface ReconcilerApi {
  webhookDeliveries: {
    list(params?: ListDeliveriesParams): Promise<Page<WebhookDelivery>>;
  };
  webhookEndpoints: {
    iterate(params?: { limit?: number }): AsyncIterable<WebhookEndpoint>;
  };
  correspondence: {
    get(correspondenceId: string): Promise<Correspondence>;
  };
}

export interface ReconcileOptions {
  dryRun?: boolean;
  /** Only these endpoints (default: every endpoint postroom knows). */
  endpoints?: string[];
  /** Only deliveries created at or after this time (a narrower, cheaper run). */
  since?: Date;
  /** Pending deliveries older than this are reported at risk. */
  atRiskAfterMs?: number;
  /** Dead deliveries created this long before the watermark are examined again. */
  overlapMs?: number;
  pageSize?: number;
  rereadConcurrency?: number;
  onProgress?: (p: ReconcileProgress) => void;
  /** Tests stop a run half way to prove it resumes from its watermark. */
  signal?: AbortSignal;
}

export interface ReconcileProgress {
  phase: 'dead-deliveries' | 'at-risk' | 're-read';
  endpointId?: string;
  pages: number;
  deliveriesScanned: number;
  gapsFound: number;
  correspondencesReread: number;
}

export interface ReconcileSummary {
  runId: number | null;
  dryRun: boolean;
  outcome: 'clean' | 'gaps_open' | 'failed';
  endpoints: string[];
  pages: number;
  deliveriesScanned: number;
  deliveriesSkipped: number;
  gapsFound: number;
  gapsFilled: number;
  gapsOpen: number;
  atRisk: { count: number; sample: Array<{ delivery_id: string; event_id: string; endpoint_id: string; created_at: string }> };
  correspondencesReread: number;
  rereadFailures: Array<{ correspondence_id: string; error: string }>;
  syntheticEventsWritten: number;
  syntheticEventsPlanned: number;
  durationMs: number;
}
