import { PostroomError } from '../errors.js';

/**
 * Stable codes: scripts and the reconciler branch on these, never on messages.
 * HTTP-derived codes first, then the ones where no usable response arrived.
 */
export type ApiErrorCode =
  | 'bad_request'
  | 'unauthorized'
  | 'insufficient_scope'
  | 'not_found'
  | 'conflict'
  | 'validation_failed'
  | 'rate_limited'
  | 'client_error'
  | 'server_error'
  | 'network_error'
  | 'timeout'
  | 'aborted'
  | 'invalid_response';

/**
 * Every failure of a service API call. Carries what on-call needs (operation,
 * status, the service's own words, how many attempts) and never the key.
 */
export class ApiError extends PostroomError {
  readonly status: number | undefined;
  readonly operation: string;
  readonly body: unknown;
  readonly attempts: number;
  readonly requiredScope: string | null | undefined;
  readonly retryAfterMs: number | undefined;
  declare readonly code: ApiErrorCode;

  constructor(init: {
    code: ApiErrorCode;
    message: string;
    operation: string;
    status?: number | undefined;
    /** The service's error body (parsed JSON, or text), with the API key scrubbed out. */
    body?: unknown;
    attempts: number;
    requiredScope?: string | null | undefined;
    retryAfterMs?: number | undefined;
    cause?: unknown;
  }) {
    const details: Record<string, unknown> = { operation: init.operation, attempts: init.attempts };
    if (init.status !== undefined) details.status = init.status;
    if (init.requiredScope) details.required_scope = init.requiredScope;
    if (init.body !== undefined) details.body = init.body;
    if (init.retryAfterMs !== undefined) details.retry_after_ms = init.retryAfterMs;
    super(init.code, init.message, { cause: init.cause, details });
    this.status = init.status;
    this.operation = init.operation;
    this.body = init.body;
    this.attempts = init.attempts;
    this.requiredScope = init.requiredScope;
    this.retryAfterMs = init.retryAfterMs;
  }
}

export function isApiError(err: unknown): err is ApiError {
  return err instanceof ApiError;
}

export function codeForStatus(status: number): ApiErrorCode {
  if (status === 400) return 'bad_request';
  if (status === 401) return 'unauthorized';
  if (status === 403) return 'insufficient_scope';
  if (status === 404) return 'not_found';
  if (status === 409) return 'conflict';
  if (status === 422) return 'validation_failed';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'server_error';
  return 'client_error';
}
