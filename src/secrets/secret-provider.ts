/**
 * Where ingress gets the secrets to try. The static provider serves the configured
 * list for every path; the endpoint-aware store (secret rotation) implements the
 * same interface per endpoint.
 */
export interface SecretSet {
  secrets: readonly string[];
  /** Parallel to `secrets`: a label safe to show in logs and metrics (never the value). */
  labels: readonly string[];
}

export interface SecretProvider {
  /** `endpointId` is set when the request came to /webhooks/{endpoint_id}. */
  secretsFor(endpointId: string | undefined): SecretSet | Promise<SecretSet>;
}

export function staticSecrets(secrets: readonly string[]): SecretProvider {
  const set: SecretSet = { secrets: [...secrets], labels: secrets.map((_, i) => `configured:${i}`) };
  return { secretsFor: () => set };
}
