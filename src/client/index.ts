export { createApiClient, type ApiClient, type ApiClientOptions } from './client.js';
export { createApiClientFromConfig } from './from-config.js';
export { ApiError, isApiError, type ApiErrorCode } from './errors.js';
export { OPERATION_SCOPES } from './scopes.js';
export * from './types.js';
