import { ApiError } from './errors.js';
import { scopeFor, type OperationName } from './scopes.js';

/**
 * Minimal shape checks on answers: enough that a caller never gets `undefined`
 * where the contract promises an id. Messages name the field and the keys that
 * were present, never values (create and rotate answers carry secrets).
 */
export function invalidResponse(operation: OperationName, status: number, problem: string): ApiError {
  return new ApiError({
    code: 'invalid_response',
    message: `${operation}: unexpected answer (${status}): ${problem}`,
    operation,
    status,
    attempts: 1,
    requiredScope: scopeFor(operation),
  });
}

export function expectObject(operation: OperationName, status: number, body: unknown): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body))
    throw invalidResponse(
      operation,
      status,
      `expected a JSON object, got ${body === undefined ? 'an empty body' : Array.isArray(body) ? 'an array' : typeof body}`,
    );
  return body as Record<string, unknown>;
}

export function expectString(operation: OperationName, status: number, obj: Record<string, unknown>, field: string): string {
  const v = obj[field];
  if (typeof v !== 'string' || v === '')
    throw invalidResponse(operation, status, `missing string field "${field}" (fields present: ${Object.keys(obj).join(', ') || 'none'})`);
  return v;
}

export function expectArray(operation: OperationName, status: number, obj: Record<string, unknown>, fields: readonly string[]): unknown[] {
  for (const f of fields) {
    const v = obj[f];
    if (Array.isArray(v)) return v;
  }
  throw invalidResponse(
    operation,
    status,
    `missing array field ${fields.map((f) => `"${f}"`).join(' or ')} (fields present: ${Object.keys(obj).join(', ') || 'none'})`,
  );
}

/** The first of `fields` holding a non-empty string (for names the spec does not show). */
export function firstString(obj: Record<string, unknown>, fields: readonly string[]): string | undefined {
  for (const f of fields) {
    const v = obj[f];
    if (typeof v === 'string' && v !== '') return v;
  }
  return undefined;
}

export function nextCursorOf(operation: OperationName, status: number, obj: Record<string, unknown>): string | null {
  const v = obj.next_cursor;
  if (v === undefined || v === null || v === '') return null;
  if (typeof v !== 'string') throw invalidResponse(operation, status, `"next_cursor" should be a string or null, got ${typeof v}`);
  return v;
}
