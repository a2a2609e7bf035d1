export { createApiClient, type ApiClient, type ApiClientOptions } from './client.js';
export { createApiClientFromConfig } from './from-config.js';
export { ApiError, API_ERROR_CODES, isApiError, type ApiErrorCode } from './errors.js';
export { OPERATION_SCOPES } from './scopes.js';
export type { ClientTls } from './dispatcher.js';
export type { Timeouts, Sleep } from './http.js';
export type { BackoffPolicy, Jitter } from '../backoff.js';
export * from './types.js';
