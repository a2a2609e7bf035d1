import type { ChangedCorrespondence, ListChangedParams } from '../client/resources/correspondence-listing.js';
import type { Correspondence, ListDeliveriesParams, Page, WebhookDelivery, WebhookEndpoint } from '../client/types.js';

/** The part of the API client the reconciler uses; the real client satisfies it. */
export interface ReconcilerApi {
  /** The key's plane: the listing watermark is kept per plane. */
  plane?: string;
  webhookDeliveries: {
    list(params?: ListDeliveriesParams): Promise<Page<WebhookDelivery>>;
  };
  webhookEndpoints: {
    iterate(params?: { limit?: number }): AsyncIterable<WebhookEndpoint>;
  };
  correspondence: {
    get(correspondenceId: string): Promise<Correspondence>;
    /** The listing of changed files; without it (or on 404) the reconciler re-reads the files it knows. */
    listChanged?(params: ListChangedParams): Promise<Page<ChangedCorrespondence>>;
  };
}

/** A run's options; each left out takes its RECONCILE_DEFAULTS value (defaults.ts). */
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
  /**
   * The completeness watermark stays this far behind the moment the walk began: a delivery the service stamps
   * with a clock behind postroom's, created after the walk, must not fall before a watermark already proved.
   */
  watermarkSettleMs?: number;
  pageSize?: number;
  rereadConcurrency?: number;
  /** The correspondence listing is walked again from this long before its watermark. */
  listingOverlapMs?: number;
  /** How far a delivery's time may lie from the change a re-read shows. */
  matchWindowMs?: number;
  /** Types to keep open even when no handler consumes them (POSTROOM_RECONCILE_CONSUMED_TYPES). */
  consumedTypes?: readonly string[];
  /** With --wait: how long to wait for another replica's run to finish (default: do not wait). */
  waitMs?: number;
  onProgress?: (p: ReconcileProgress) => void;
  /** Tests stop a run half way to prove it resumes from its watermark. */
  signal?: AbortSignal;
}

export interface ReconcileProgress {
  phase: 'dead-deliveries' | 'at-risk' | 're-read';
  endpointId?: string;
  pages: number;
  deliveries_scanned: number;
  gaps_found: number;
  correspondences_reread: number;
}

export interface ReconcileSummary {
  run_id: number | null;
  dry_run: boolean;
  outcome: 'clean' | 'gaps_open' | 'failed';
  endpoints: string[];
  pages: number;
  deliveries_scanned: number;
  deliveries_skipped: number;
  gaps_found: number;
  /** Closed in this run, by what closed them. */
  gaps_recovered: number;
  gaps_state_synced: number;
  gaps_not_consumed: number;
  /** Open after the run: each is something a consumer needs that postroom could not prove recovered. */
  gaps_open: number;
  /** How files were found: the service's listing of changed files, or (no listing) the files postroom knows. */
  reread_source: 'listing' | 'known';
  at_risk: { count: number; sample: Array<{ delivery_id: string; event_id: string; endpoint_id: string; created_at: string }> };
  /**
   * Each walked endpoint's completeness watermark after the run (ISO 8601; null when none is proved yet): every
   * delivery created for it before that instant is in the inbox or a gap closed with evidence.
   */
  complete_through: Record<string, string | null>;
  correspondences_reread: number;
  reread_failures: Array<{ correspondence_id: string; error: string }>;
  synthetic_events_written: number;
  synthetic_events_planned: number;
  duration_ms: number;
}
