export { applyToProjection } from './apply.js';
export { getProjectedCorrespondence, listOpenCorrespondenceIds, type ProjectedCorrespondence, type ProjectedParticipant, type SendSummary } from './read.js';
export { compareWithService, type ProjectionDifference, type ServiceCorrespondence } from './compare.js';
export { STATUS_RANK, STATE_RANK, FINAL_STATUSES, PROJECTED_TYPES } from './rules.js';
