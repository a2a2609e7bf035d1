/**
 * The one error base class. `code` is a stable string that scripts, tests and
 * HTTP bodies may rely on; `message` is for people and may change.
 */
export class PostroomError extends Error {
  readonly code: string;
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(code: string, message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.details = options.details;
  }

  toJSON(): { code: string; message: string; details?: Record<string, unknown> } {
    return this.details
      ? { code: this.code, message: this.message, details: { ...this.details } }
      : { code: this.code, message: this.message };
  }
}

/** A setting or flag has a value we cannot use. Always names the setting and what is accepted. */
export class ConfigError extends PostroomError {
  constructor(setting: string, message: string, options: { cause?: unknown } = {}) {
    super('config_invalid', `${setting}: ${message}`, { ...options, details: { setting } });
  }
}

/** The store did not answer, or not in time. Ingress maps it to 503 so the sender retries. */
export class StoreUnavailableError extends PostroomError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('store_unavailable', message, options);
  }
}

export function isPostroomError(err: unknown): err is PostroomError {
  return err instanceof PostroomError;
}

/** Best-effort message for unknown throwables, without dumping stacks at users. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
