import { PostroomError } from '../errors.js';

/**
 * An error the sandbox answers with. The body is `{"error":{"code","message",…extra}}`;
 * `code` is stable, `message` is for people. Extra fields (field, required_scope,
 * reason) sit beside them so clients need not parse messages.
 */
export class SandboxApiError extends PostroomError {
  readonly status: number;
  readonly extra: Readonly<Record<string, unknown>>;

  constructor(status: number, code: string, message: string, extra: Record<string, unknown> = {}) {
    super(code, message, { details: { status, ...extra } });
    this.status = status;
    this.extra = extra;
  }

  body(): { error: Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, ...this.extra } };
  }
}

export const apiErrors = {
  missingKey: () => new SandboxApiError(401, 'missing_api_key', 'Send the API key as `Authorization: Bearer <API_KEY>`.'),
  invalidKey: () => new SandboxApiError(401, 'invalid_api_key', 'The API key is unknown, revoked or past its rotation grace period.'),
  insufficientScope: (scope: string) =>
    new SandboxApiError(403, 'insufficient_scope', `This operation needs the scope ${scope}, which the API key does not carry.`, {
      required_scope: scope,
    }),
  widerKey: (scope: string) =>
    new SandboxApiError(
      403,
      'insufficient_scope',
      `That API key carries the scope ${scope}, which yours does not: a key cannot read, rotate or revoke a key wider than itself.`,
      {
        required_scope: scope,
      },
    ),
  notFound: (what: string, id: string) =>
    new SandboxApiError(404, 'not_found', `No ${what} with id ${JSON.stringify(id.slice(0, 100))}.`, { resource: what }),
  invalid: (field: string, message: string) => new SandboxApiError(400, 'invalid_request', `${field}: ${message}`, { field }),
  invalidState: (message: string) => new SandboxApiError(409, 'invalid_state', message),
  unprocessable: (code: string, message: string, extra: Record<string, unknown> = {}) => new SandboxApiError(422, code, message, extra),
};
