export type { ProjectedCorrespondence, ProjectedParticipant, SendSummary } from './read.js';
export type { ProjectionDifference, ServiceCorrespondence } from './compare.js';
