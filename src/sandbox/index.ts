export {
  createSandbox,
  startSandbox,
  DEFAULT_RETRY_SCHEDULE,
  DEFAULT_ATTEMPT_TIMEOUT_MS,
  type Sandbox,
  type SandboxOptions,
} from './sandbox.js';
export type { SandboxControl, EventSummary, EventDetail, ClaimView, SandboxStats } from './control.js';
export type { FaultConfig, FailureWindow } from './faults.js';
export type { FaultLogEntry } from './dispatcher.js';
export type { DeliveryRecord } from './deliveries.js';
export type { CorrespondenceView, EndpointView } from './state.js';
export type { Addressing, RecipientInput } from './addressing.js';
export { outcomeFor, ADDRESSING_TYPES } from './addressing.js';
export {
  SCOPES,
  EVENT_TYPES,
  SUBSCRIBABLE_EVENT_TYPES,
  PARTICIPANT_ACTS,
  type Scope,
  type EventType,
  type ParticipantAct,
  type Plane,
} from './catalogue.js';
export { parseKeySpec, generateKey, type KeySpec } from './keys.js';
export { checkWebhookUrl, isPublicAddress, type LookupAll } from './url-policy.js';
export { SandboxApiError } from './errors.js';
export {
  startTraffic,
  DEFAULT_MIX,
  type TrafficOptions,
  type TrafficRun,
  type TrafficCounters,
  type TrafficTarget,
  type TrafficOp,
} from './traffic.js';

// Types the exports above name, so the entry point is complete on its own.
export type { addressingSchema, recipientSchema, Outcome } from './addressing.js';
export type { PLANES, DELIVERY_STATUSES, DeliveryStatus, CorrespondenceStatus, ParticipantState } from './catalogue.js';
export type { WalletOptions } from './wallet.js';
export type { SendSummary } from './state.js';
export type { UrlPolicyOptions, UrlCheck, UrlRefusal } from './url-policy.js';
export type { PostroomError } from '../errors.js';
export type { SignedPayloadScheme } from '../signature/index.js';
export type { Clock } from '../clock.js';
