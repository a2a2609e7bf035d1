import type { ApiClient } from '../client/index.js';
import type { WebhookEndpoint } from '../client/types.js';
import type { Db, Queryable } from '../db/types.js';
import { PostroomError, describeError } from '../errors.js';
import type { SecretCipher } from './crypto.js';
import { recordEndpoint, saveEndpointSecret, type EndpointRecord } from './store.js';

/** In an endpoint's URL, stands for the id the service assigns, so the endpoint can point at /webhooks/{endpoint_id} from the start. */
export const ENDPOINT_ID_PLACEHOLDER = '{endpoint_id}';

/** Where a secret the service returns (once) is kept: postroom's encrypted store. */
export interface SecretStore {
  db: Db;
  cipher: SecretCipher;
}

/** The part of the API client endpoint set-up uses. */
export type EndpointApi = Pick<ApiClient, 'plane'> & {
  webhookEndpoints: Pick<ApiClient['webhookEndpoints'], 'create' | 'update' | 'rotateSecret'>;
};

/**
 * Something that went wrong after the service had done its part. The set-up goes on; the caller says so (an
 * unstored secret or a URL left at the placeholder leaves the endpoint unusable until fixed).
 */
export type EndpointSetupIssue =
  | { kind: 'secret_not_stored'; error: unknown }
  | { kind: 'record_failed'; error: unknown }
  | { kind: 'url_not_updated'; error: unknown; endpointId: string; initialUrl: string; finalUrl: string };

export interface CreateEndpointInput {
  /** Where the service delivers; ENDPOINT_ID_PLACEHOLDER is replaced by the new endpoint's id. */
  url: string;
  events: string[];
  /** Where the secret goes; without one the endpoint is only recorded, and the caller shows the secret. */
  store: SecretStore | undefined;
  /** How long a secret the new one replaces stays accepted. */
  overlapSeconds: number;
  /**
   * When the secret cannot be stored: false, fail (the secret is discarded unseen); true, report the
   * issue and return the secret so the caller can show it.
   */
  keepUnstoredSecret: boolean;
  /** The database the endpoint is recorded in when there is no store (opened only then). */
  recordDb: () => Promise<Queryable>;
  onIssue: (issue: EndpointSetupIssue) => void;
}

export interface CreatedEndpoint {
  /** As the service answered, without the secret, with the final URL. */
  endpoint: WebhookEndpoint;
  secret: string;
  stored: boolean;
}

/**
 * Creates an endpoint at the service and stores its signing secret before anything
 * else happens to it. With ENDPOINT_ID_PLACEHOLDER in the URL, the endpoint is first
 * created at a URL postroom answers 401 on (the id is not known before; the service
 * retries), and its URL then set to the one with the real id, so postroom verifies
 * its deliveries at POST /webhooks/<id> with that endpoint's own secret.
 */
export async function createEndpoint(api: EndpointApi, input: CreateEndpointInput): Promise<CreatedEndpoint> {
  const templated = input.url.includes(ENDPOINT_ID_PLACEHOLDER);
  const initialUrl = templated ? input.url.replace(ENDPOINT_ID_PLACEHOLDER, '_pending') : input.url;
  const created = await api.webhookEndpoints.create({ url: initialUrl, events: input.events });
  const finalUrl = templated ? input.url.replace(ENDPOINT_ID_PLACEHOLDER, encodeURIComponent(created.endpoint_id)) : input.url;
  const record = { url: finalUrl, events: created.events, active: created.active, created_at: created.created_at };
  const result: CreatedEndpoint = { endpoint: withoutSecret(created), secret: created.secret, stored: false };

  if (input.store) {
    try {
      await storeSecret(input.store, api.plane, {
        endpointId: created.endpoint_id,
        secret: created.secret,
        overlapSeconds: input.overlapSeconds,
        endpoint: record,
      });
      result.stored = true;
    } catch (err) {
      if (!input.keepUnstoredSecret) {
        throw new PostroomError(
          'secret_not_stored',
          `endpoint ${created.endpoint_id} was created at the service, but its signing secret could not be stored (${describeError(err)}), so it was discarded unseen. ` +
            `Once the database is reachable, run \`postroom endpoints rotate-secret ${created.endpoint_id}\` to get and store a new one.`,
          { cause: err },
        );
      }
      input.onIssue({ kind: 'secret_not_stored', error: err });
    }
  } else {
    try {
      await recordEndpoint(await input.recordDb(), { endpoint_id: created.endpoint_id, ...record, plane: api.plane });
    } catch (err) {
      input.onIssue({ kind: 'record_failed', error: err });
    }
  }

  if (templated) {
    try {
      const updated = await api.webhookEndpoints.update(created.endpoint_id, { url: finalUrl });
      result.endpoint = { ...result.endpoint, ...(updated ? withoutSecret(updated) : {}), url: finalUrl };
    } catch (err) {
      input.onIssue({ kind: 'url_not_updated', error: err, endpointId: created.endpoint_id, initialUrl, finalUrl });
    }
  }
  return result;
}

export interface RotateSecretInput {
  endpointId: string;
  /** Where the new secret goes; without one the caller shows it. */
  store: SecretStore | undefined;
  /** How long the previous secret stays accepted. */
  overlapSeconds: number;
  /** As for createEndpoint. */
  keepUnstoredSecret: boolean;
  onIssue: (issue: EndpointSetupIssue) => void;
}

/** Asks the service for a new signing secret and stores it; the previous one stays accepted until `previousUntil`. */
export async function rotateEndpointSecret(
  api: EndpointApi,
  input: RotateSecretInput,
): Promise<{ endpointId: string; secret: string; previousUntil: Date | undefined }> {
  const rotated = await api.webhookEndpoints.rotateSecret(input.endpointId);
  let previousUntil: Date | undefined;
  if (input.store) {
    try {
      previousUntil = await storeSecret(input.store, api.plane, {
        endpointId: rotated.endpoint_id,
        secret: rotated.secret,
        overlapSeconds: input.overlapSeconds,
      });
    } catch (err) {
      if (!input.keepUnstoredSecret) {
        throw new PostroomError(
          'secret_not_stored',
          `the secret of ${input.endpointId} was rotated at the service, but the new one could not be stored (${describeError(err)}), so it was discarded unseen and deliveries to postroom will fail verification. ` +
            `Run \`postroom endpoints rotate-secret ${input.endpointId}\` again once the database is reachable.`,
          { cause: err },
        );
      }
      input.onIssue({ kind: 'secret_not_stored', error: err });
    }
  }
  return { endpointId: rotated.endpoint_id, secret: rotated.secret, previousUntil };
}

/** Stores the secret the service just returned; when the secrets it replaces stop being accepted. */
async function storeSecret(
  store: SecretStore,
  plane: string,
  input: { endpointId: string; secret: string; overlapSeconds: number; endpoint?: Omit<EndpointRecord, 'endpoint_id'> },
): Promise<Date> {
  const now = new Date();
  await saveEndpointSecret(store.db, store.cipher, {
    endpointId: input.endpointId,
    secret: input.secret,
    overlapSeconds: input.overlapSeconds,
    now,
    endpoint: { plane, ...input.endpoint },
  });
  return new Date(now.getTime() + input.overlapSeconds * 1000);
}

/** A copy without the `secret` field, keeping the endpoint's type (Omit would drop the known fields of an indexed type). */
function withoutSecret(value: WebhookEndpoint): WebhookEndpoint {
  const { secret: _secret, ...rest } = value;
  return rest as WebhookEndpoint;
}
