/**
 * postroom/sandbox: a local Correspondence Delivery Service for development and tests
 * (docs/sandbox.md). Start one, drive it through `sandbox.control` (or its HTTP routes),
 * and let startTraffic send realistic load at it. etc/postroom-sandbox.api.md is this
 * surface as API Extractor reads it; everything else under src/sandbox is the sandbox's own.
 */
export { createSandbox, startSandbox, type Sandbox, type SandboxOptions } from './sandbox.js';
export type { SandboxControl, EventSummary } from './control.js';
export type { CorrespondenceView, EndpointView } from './state.js';
export type { DeliveryRecord } from './deliveries.js';
export type { Addressing } from './addressing.js';
export type { FaultConfig, FailureWindow } from './faults.js';
export type { FaultLogEntry } from './dispatcher.js';
export {
  EVENT_TYPES,
  SUBSCRIBABLE_EVENT_TYPES,
  SCOPES,
  type EventType,
  type Scope,
  type ParticipantAct,
  type Plane,
  type DeliveryStatus,
} from './catalogue.js';
export { startTraffic, type TrafficOptions, type TrafficRun, type TrafficCounters, type TrafficOp } from './traffic.js';
