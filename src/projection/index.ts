export type { ProjectedCorrespondence, SendSummary } from './read.js';
export type { ProjectionDifference, ServiceCorrespondence } from './compare.js';
