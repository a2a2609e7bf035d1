/**
 * Operation → the scope the spec says it needs (null: none stated). Used to turn a
 * bare 403 into "this key lacks webhooks.write", and kept in one table so the CLI
 * and docs can show it.
 */
export const OPERATION_SCOPES = {
  me: null,
  'documents.upload': 'documents.write',
  'correspondence.create': 'correspondence.write',
  'correspondence.get': 'correspondence.read',
  'correspondence.listChanged': 'correspondence.read',
  'plans.run': 'correspondence.write',
  'apiKeys.rotate': 'apikeys.write',
  'webhookEndpoints.create': 'webhooks.write',
  'webhookEndpoints.list': 'webhooks.read',
  'webhookEndpoints.update': 'webhooks.write',
  'webhookEndpoints.delete': 'webhooks.write',
  'webhookEndpoints.rotateSecret': 'webhooks.write',
  'webhookEndpoints.test': 'webhooks.write',
  'webhookDeliveries.list': 'webhooks.read',
} as const satisfies Record<string, string | null>;

export type OperationName = keyof typeof OPERATION_SCOPES;

export function scopeFor(operation: OperationName): string | null {
  return OPERATION_SCOPES[operation];
}
