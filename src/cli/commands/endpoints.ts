import type { Command } from 'commander';
import type { WebhookEndpoint } from '../../client/index.js';
import { PostroomError, describeError } from '../../errors.js';
import { eventTypeTraits, eventTypesWhere } from '../../events/type-table.js';
import { ENDPOINT_ID_PLACEHOLDER, createEndpoint, rotateEndpointSecret, type EndpointSetupIssue } from '../../secrets/endpoint-setup.js';
import { secretCipherFromConfig } from '../../secrets/from-config.js';
import { describeEndpointSecrets, retireEndpoint, updateKnownEndpoint } from '../../secrets/store.js';
import { apiClientFor, bestEffort, confirmLiveWrite, secretStoreFor } from '../api.js';
import type { CliContext } from '../context.js';
import { parseCount, parseDuration } from '../duration.js';
import { printJson, printTable } from '../output.js';

/** The types an endpoint can subscribe to (the test operation's is sent on request only). */
const SUBSCRIBABLE_EVENTS: readonly string[] = eventTypesWhere((t) => t.delivery === 'subscribed');
const EVENT_NAME = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;

/** `--events a,b --events c` → [a, b, c], each checked; unknown but well-formed names only warn (the catalogue grows). */
export function parseEvents(ctx: CliContext, raw: readonly string[]): string[] {
  const events = [
    ...new Set(
      raw
        .flatMap((r) => r.split(','))
        .map((s) => s.trim())
        .filter((s) => s !== ''),
    ),
  ];
  if (events.length === 0)
    throw new PostroomError(
      'invalid_flag',
      `--events: expected one or more event types, e.g. --events participant.acted,correspondence.sealed (known: ${SUBSCRIBABLE_EVENTS.join(', ')})`,
    );
  for (const e of events) {
    const traits = eventTypeTraits(e);
    if (traits?.delivery === 'on_request')
      throw new PostroomError(
        'invalid_flag',
        `--events: ${e} cannot be subscribed to; every endpoint receives it from \`postroom endpoints test\``,
      );
    if (!EVENT_NAME.test(e))
      throw new PostroomError(
        'invalid_flag',
        `--events: "${e.slice(0, 60)}" is not an event type; expected names like ${SUBSCRIBABLE_EVENTS.slice(0, 3).join(', ')} (known: ${SUBSCRIBABLE_EVENTS.join(', ')})`,
      );
    if (traits === undefined) ctx.io.stderr.write(`warning: --events: ${e} is not in the spec's event catalogue; subscribing anyway\n`);
  }
  return events;
}

export function parseUrl(flag: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.replace(ENDPOINT_ID_PLACEHOLDER, 'placeholder'));
  } catch {
    throw new PostroomError(
      'invalid_flag',
      `${flag}: expected an absolute https URL such as https://hooks.example.com/webhooks/${ENDPOINT_ID_PLACEHOLDER}, got "${raw.slice(0, 80)}"`,
    );
  }
  // postroom registers https only; plain http is let through for loopback alone, where a local sandbox delivers.
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(url.hostname))) {
    throw new PostroomError(
      'invalid_flag',
      `${flag}: expected an https URL (plain http only for 127.0.0.1 or localhost, for a local sandbox), got ${url.protocol}//${url.hostname}`,
    );
  }
  if (url.username || url.password)
    throw new PostroomError('invalid_flag', `${flag}: the URL must not carry credentials (the service refuses it)`);
  return raw;
}

/**
 * A URL at the receiver's plain `/webhooks` route: there postroom verifies with
 * POSTROOM_WEBHOOK_SECRETS only, never an endpoint's stored secret, so every
 * delivery would be refused (401) and end dead.
 */
export function isPlainWebhooksUrl(raw: string): boolean {
  if (raw.includes(ENDPOINT_ID_PLACEHOLDER)) return false;
  try {
    return /\/webhooks\/?$/.test(new URL(raw).pathname);
  } catch {
    return false;
  }
}

function withEndpointId(raw: string, id: string): string {
  const url = new URL(raw);
  url.pathname = `${url.pathname.replace(/\/$/, '')}/${id}`;
  // URL would percent-encode the braces of the placeholder.
  return url.toString().replace('%7Bendpoint_id%7D', ENDPOINT_ID_PLACEHOLDER);
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(hostname);
}

function row(e: WebhookEndpoint): Record<string, unknown> {
  return { endpoint_id: e.endpoint_id, url: e.url, events: (e.events ?? []).join(','), active: e.active, created_at: e.created_at };
}

export function registerEndpointsCommands(program: Command, ctx: CliContext): Command {
  const endpoints = program
    .command('endpoints')
    .description("Manage the service's webhook endpoints; signing secrets go straight into postroom's encrypted store.")
    .addHelpText(
      'after',
      `
Examples:
  $ postroom endpoints create --url https://hooks.example.com/webhooks/{endpoint_id} --events participant.acted,correspondence.sealed
  $ postroom endpoints list --json
  $ postroom endpoints rotate-secret ep_123

Needs POSTROOM_API_BASE_URL and POSTROOM_API_KEY; create and rotate-secret also POSTROOM_ENCRYPTION_KEY.
The plane (sandbox or live, from the key) is printed on stderr; writes on the live plane ask first (--yes in scripts).`,
    );
  registerList(endpoints, ctx);
  registerCreate(endpoints, ctx);
  registerUpdate(endpoints, ctx);
  registerDelete(endpoints, ctx);
  registerTest(endpoints, ctx);
  registerRotateSecret(endpoints, ctx);
  return endpoints;
}

function registerList(endpoints: Command, ctx: CliContext): void {
  endpoints
    .command('list')
    .description('List webhook endpoints (all pages, or up to --limit).')
    .option('--limit <n>', 'at most this many (1-10000)')
    .option('--json', 'print a JSON array (no secrets: the service never lists them)')
    .addHelpText('after', `\nExamples:\n  $ postroom endpoints list\n  $ postroom endpoints list --json | jq '.[].url'`)
    .action(async (opts: { limit?: string; json?: boolean }) => {
      const limit = opts.limit === undefined ? undefined : parseCount('--limit', opts.limit, { min: 1, max: 10_000 });
      const client = await apiClientFor(ctx);
      try {
        const items: WebhookEndpoint[] = [];
        for await (const e of client.webhookEndpoints.iterate(limit === undefined ? {} : { limit: Math.min(limit, 100) })) {
          items.push(e);
          if (limit !== undefined && items.length >= limit) break;
        }
        if (opts.json) printJson(ctx.io, items);
        else printTable(ctx.io, items.map(row), ['endpoint_id', 'url', 'events', 'active', 'created_at']);
      } finally {
        await client.close();
      }
    });
}

function registerCreate(endpoints: Command, ctx: CliContext): void {
  endpoints
    .command('create')
    .description('Create an endpoint and store its signing secret (shown once by the service) encrypted in the database.')
    .requiredOption('--url <url>', `where the service delivers; ${ENDPOINT_ID_PLACEHOLDER} is replaced by the new endpoint's id`)
    .option('--events <types...>', `event types to subscribe to, comma- or space-separated (${SUBSCRIBABLE_EVENTS.join(', ')})`)
    .option('--show-secret', 'also print the signing secret (e.g. to configure another receiver); it is never printed otherwise')
    .option('--yes', 'confirm a write on the live plane without a prompt (required when not on a terminal)')
    .option('--json', 'print the endpoint as JSON')
    .addHelpText(
      'after',
      `
Examples:
  $ postroom endpoints create --url https://hooks.example.com/webhooks/{endpoint_id} --events participant.acted correspondence.sealed
  $ postroom endpoints create --url https://hooks.example.com/webhooks/{endpoint_id} --events participant.acted --yes --json

With ${ENDPOINT_ID_PLACEHOLDER} in --url the endpoint is created, its secret stored, and its URL then set to the
one with the real id, so postroom verifies its deliveries at POST /webhooks/<id> with that endpoint's own secret.`,
    )
    .action(async (opts: { url: string; events?: string[]; showSecret?: boolean; yes?: boolean; json?: boolean }) => {
      const url = parseUrl('--url', opts.url);
      if (!opts.events)
        throw new PostroomError(
          'invalid_flag',
          `--events is required: an endpoint created without events subscribes to nothing (known: ${SUBSCRIBABLE_EVENTS.join(', ')})`,
        );
      const events = parseEvents(ctx, opts.events);
      const store = await secretStoreFor(ctx, { showSecret: opts.showSecret, command: 'endpoints create' });
      if (store && isPlainWebhooksUrl(url)) refusePlainWebhooksUrl(ctx, url, opts.showSecret);
      const client = await apiClientFor(ctx);
      try {
        await confirmLiveWrite(ctx, client, { yes: opts.yes, action: `create a webhook endpoint for ${url}` });
        const { endpoint, secret, stored } = await createEndpoint(client, {
          url,
          events,
          store,
          overlapSeconds: ctx.config().secretOverlapSeconds,
          keepUnstoredSecret: opts.showSecret ?? false,
          recordDb: () => ctx.db(),
          onIssue: (issue) => warnOfIssue(ctx, issue, 'the signing secret'),
        });
        if (opts.json) {
          printJson(ctx.io, { ...endpoint, secret_stored: stored, ...(opts.showSecret ? { secret } : {}) });
          return;
        }
        ctx.io.stdout.write(
          `created ${endpoint.endpoint_id}\n  url     ${endpoint.url}\n  events  ${(endpoint.events ?? []).join(', ')}\n`,
        );
        ctx.io.stdout.write(stored ? `  secret  stored encrypted in postroom's database (never printed; --show-secret to see it)\n` : '');
        if (opts.showSecret) ctx.io.stdout.write(`  secret  ${secret}\n`);
      } finally {
        await client.close();
      }
    });
}

/**
 * The receiver's plain /webhooks route verifies with POSTROOM_WEBHOOK_SECRETS only, never a stored secret: refused
 * before anything is sent, unless the secret is to be shown (to be put there), when it is only a warning.
 */
function refusePlainWebhooksUrl(ctx: CliContext, url: string, showSecret: boolean | undefined): void {
  const fixed = withEndpointId(url, ENDPOINT_ID_PLACEHOLDER);
  if (!showSecret) {
    throw new PostroomError(
      'invalid_flag',
      `--url: ${url} is the receiver's plain /webhooks route, which verifies with POSTROOM_WEBHOOK_SECRETS only, so the secret stored for this endpoint would never be used ` +
        `and every delivery would be refused. Use --url ${fixed} (deliveries then verify with this endpoint's own stored secret). Nothing was sent to the service.`,
    );
  }
  ctx.io.stderr.write(
    `warning: ${url} verifies with POSTROOM_WEBHOOK_SECRETS only: put the secret printed below there, or use --url ${fixed}\n`,
  );
}

/** Says what went wrong after the service acted; an unstored secret or an unfixed URL makes the command fail. */
function warnOfIssue(ctx: CliContext, issue: EndpointSetupIssue, secretName: string): void {
  switch (issue.kind) {
    case 'secret_not_stored':
      ctx.io.stderr.write(
        `warning: ${secretName} could not be stored (${describeError(issue.error)}); it is printed below as asked with --show-secret\n`,
      );
      ctx.exitCode = 1;
      return;
    case 'record_failed':
      ctx.io.stderr.write(`warning: recording the endpoint locally failed: ${(issue.error as Error).message}\n`);
      return;
    case 'url_not_updated':
      ctx.io.stderr.write(
        `warning: endpoint ${issue.endpointId} was created with the placeholder URL ${issue.initialUrl} and could not be pointed at ${issue.finalUrl} (${describeError(issue.error)}); ` +
          `run \`postroom endpoints update ${issue.endpointId} --url ${issue.finalUrl}\`\n`,
      );
      ctx.exitCode = 1;
      return;
  }
}

function registerUpdate(endpoints: Command, ctx: CliContext): void {
  endpoints
    .command('update <endpoint_id>')
    .description("Change an endpoint's URL and/or subscribed events.")
    .option('--url <url>', 'new delivery URL')
    .option('--events <types...>', 'replace the subscribed event types (comma- or space-separated)')
    .option('--yes', 'confirm a write on the live plane without a prompt')
    .option('--json', 'print the updated endpoint as JSON')
    .addHelpText(
      'after',
      `\nExamples:\n  $ postroom endpoints update ep_123 --events participant.acted,claim.claimed\n  $ postroom endpoints update ep_123 --url https://hooks.example.com/webhooks/ep_123`,
    )
    .action(async (endpointId: string, opts: { url?: string; events?: string[]; yes?: boolean; json?: boolean }) => {
      if (opts.url === undefined && opts.events === undefined)
        throw new PostroomError('invalid_flag', 'nothing to change: give --url and/or --events');
      const patch = {
        ...(opts.url !== undefined ? { url: parseUrl('--url', opts.url) } : {}),
        ...(opts.events !== undefined ? { events: parseEvents(ctx, opts.events) } : {}),
      };
      if (patch.url !== undefined && isPlainWebhooksUrl(patch.url) && secretCipherFromConfig(ctx.config())) {
        const stored = await describeEndpointSecrets(await ctx.db(), endpointId);
        if (stored.some((s) => s.state === 'current')) {
          throw new PostroomError(
            'invalid_flag',
            `--url: ${patch.url} is the receiver's plain /webhooks route, which verifies with POSTROOM_WEBHOOK_SECRETS only, so ${endpointId}'s stored secret would never be used ` +
              `and every delivery would be refused. Use --url ${withEndpointId(patch.url, endpointId)}. Nothing was sent to the service.`,
          );
        }
      }
      const client = await apiClientFor(ctx);
      try {
        await confirmLiveWrite(ctx, client, { yes: opts.yes, action: `update webhook endpoint ${endpointId}` });
        const updated = await client.webhookEndpoints.update(endpointId, patch);
        await bestEffort(ctx, 'updating the local endpoint record', async () => updateKnownEndpoint(await ctx.db(), endpointId, patch));
        if (opts.json) printJson(ctx.io, updated ?? { endpoint_id: endpointId, ...patch });
        else
          ctx.io.stdout.write(
            `updated ${endpointId}${patch.url ? `\n  url     ${patch.url}` : ''}${patch.events ? `\n  events  ${patch.events.join(', ')}` : ''}\n`,
          );
      } finally {
        await client.close();
      }
    });
}

function registerDelete(endpoints: Command, ctx: CliContext): void {
  endpoints
    .command('delete <endpoint_id>')
    .description('Delete an endpoint at the service; its stored secret keeps verifying in-flight deliveries for the overlap, then expires.')
    .option('--yes', 'confirm a write on the live plane without a prompt')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', `\nExample:\n  $ postroom endpoints delete ep_123 --yes`)
    .action(async (endpointId: string, opts: { yes?: boolean; json?: boolean }) => {
      const client = await apiClientFor(ctx);
      try {
        await confirmLiveWrite(ctx, client, { yes: opts.yes, action: `delete webhook endpoint ${endpointId}` });
        await client.webhookEndpoints.delete(endpointId);
        await bestEffort(ctx, 'retiring the local endpoint record', async () =>
          retireEndpoint(await ctx.db(), { endpointId, overlapSeconds: ctx.config().secretOverlapSeconds, now: new Date() }),
        );
        if (opts.json) printJson(ctx.io, { endpoint_id: endpointId, deleted: true });
        else ctx.io.stdout.write(`deleted ${endpointId}\n`);
      } finally {
        await client.close();
      }
    });
}

function registerTest(endpoints: Command, ctx: CliContext): void {
  endpoints
    .command('test <endpoint_id>')
    .description('Ask the service to send one signed webhook.test event to the endpoint.')
    .option('--yes', 'confirm a write on the live plane without a prompt')
    .option('--json', "print the service's answer as JSON")
    .addHelpText('after', `\nExample:\n  $ postroom endpoints test ep_123 && postroom inbox list --type webhook.test --limit 1`)
    .action(async (endpointId: string, opts: { yes?: boolean; json?: boolean }) => {
      const client = await apiClientFor(ctx);
      try {
        await confirmLiveWrite(ctx, client, { yes: opts.yes, action: `send a test event to webhook endpoint ${endpointId}` });
        const answer = await client.webhookEndpoints.test(endpointId);
        if (opts.json) printJson(ctx.io, { endpoint_id: endpointId, sent: true, response: answer ?? null });
        else
          ctx.io.stdout.write(`test event requested for ${endpointId}; it should appear in \`postroom inbox list --type webhook.test\`\n`);
      } finally {
        await client.close();
      }
    });
}

function registerRotateSecret(endpoints: Command, ctx: CliContext): void {
  endpoints
    .command('rotate-secret <endpoint_id>')
    .description('Get a new signing secret and store it; the previous one stays accepted for POSTROOM_SECRET_OVERLAP_SECONDS.')
    .option('--show-secret', 'also print the new secret; it is never printed otherwise')
    .option(
      '--overlap <duration>',
      'how long the previous secret stays accepted, e.g. 1h, or 0s after a leak (default POSTROOM_SECRET_OVERLAP_SECONDS)',
    )
    .option('--yes', 'confirm a write on the live plane without a prompt')
    .option('--json', 'print the result as JSON (without the secret unless --show-secret)')
    .addHelpText(
      'after',
      `
Examples:
  $ postroom endpoints rotate-secret ep_123
  $ postroom endpoints rotate-secret ep_123 --overlap 0s --yes     after a leak: the old secret stops verifying at once

The service signs with the new secret at once; postroom keeps accepting the old one until the overlap ends,
so deliveries signed before the rotation and still being retried verify. Every running ingress picks the new
secret up within seconds. Watch postroom_ingress_secret_matches_total{secret="endpoint:<id>:previous"} fall to zero.`,
    )
    .action(async (endpointId: string, opts: { showSecret?: boolean; overlap?: string; yes?: boolean; json?: boolean }) => {
      const overlapSeconds = opts.overlap === undefined ? undefined : Math.floor(parseDuration('--overlap', opts.overlap) / 1000);
      if (overlapSeconds !== undefined && overlapSeconds > 30 * 86_400)
        throw new PostroomError('invalid_flag', '--overlap: expected at most 30d');
      const store = await secretStoreFor(ctx, { showSecret: opts.showSecret, command: `endpoints rotate-secret ${endpointId}` });
      const client = await apiClientFor(ctx);
      try {
        await confirmLiveWrite(ctx, client, { yes: opts.yes, action: `rotate the signing secret of webhook endpoint ${endpointId}` });
        const rotated = await rotateEndpointSecret(client, {
          endpointId,
          store,
          overlapSeconds: overlapSeconds ?? ctx.config().secretOverlapSeconds,
          keepUnstoredSecret: opts.showSecret ?? false,
          onIssue: (issue) => warnOfIssue(ctx, issue, 'the new secret'),
        });
        const { previousUntil } = rotated;
        if (opts.json) {
          printJson(ctx.io, {
            endpoint_id: rotated.endpointId,
            secret_stored: previousUntil !== undefined,
            previous_accepted_until: previousUntil?.toISOString() ?? null,
            ...(opts.showSecret ? { secret: rotated.secret } : {}),
          });
          return;
        }
        ctx.io.stdout.write(`rotated the signing secret of ${rotated.endpointId}\n`);
        if (previousUntil) {
          ctx.io.stdout.write(
            previousUntil.getTime() <= Date.now()
              ? '  new secret stored encrypted; the previous one is no longer accepted\n'
              : `  new secret stored encrypted; the previous one is accepted until ${previousUntil.toISOString()}\n`,
          );
        }
        if (opts.showSecret) ctx.io.stdout.write(`  secret  ${rotated.secret}\n`);
      } finally {
        await client.close();
      }
    });
}
