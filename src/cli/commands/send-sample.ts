import type { Command } from 'commander';
import { readDevSecret } from '../../app/dev-secret.js';
import { PostroomError } from '../../errors.js';
import { SAMPLE_EVENT_TYPE, sampleEnvelope } from '../../events/sample.js';
import { sign } from '../../signature/index.js';
import type { CliContext } from '../context.js';
import { printJson } from '../output.js';

export function registerSendSampleCommand(program: Command, ctx: CliContext): void {
  program
    .command('send-sample')
    .description('Sign a sample event exactly as the service would and POST it to a receiver (curl cannot sign).')
    .option('--url <url>', 'the receiver webhook URL', 'http://127.0.0.1:8080/webhooks')
    .option('--type <type>', 'event type', SAMPLE_EVENT_TYPE)
    .option('--secret-file <path>', 'file holding the signing secret (default: the development secret, or POSTROOM_WEBHOOK_SECRETS)')
    .option('--json', 'print the sent event and the response as JSON')
    .addHelpText(
      'after',
      `\nExamples:\n  $ postroom send-sample\n  $ postroom send-sample --url http://127.0.0.1:8080/webhooks --type correspondence.created`,
    )
    .action(async (opts: { url: string; type: string; secretFile?: string; json?: boolean }) => {
      const config = ctx.config();
      const secret = await resolveSecret(opts.secretFile, config.ingress.secrets[0], config.database.dataDir);
      const event = sampleEnvelope(opts.type);
      const body = JSON.stringify(event);
      let res;
      try {
        const { request } = await import('undici');
        res = await request(opts.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-service-signature': sign({ secret, body, scheme: config.ingress.signedPayload }),
            'x-service-event-id': event.event_id,
            'x-service-event-type': opts.type,
          },
          body,
          headersTimeout: 10_000,
          bodyTimeout: 10_000,
        });
      } catch (err) {
        throw new PostroomError('send_failed', `Could not reach ${opts.url}: ${(err as Error).message}. Is \`postroom serve\` running?`, {
          cause: err,
        });
      }
      const text = await res.body.text();
      if (opts.json) printJson(ctx.io, { event, status: res.statusCode, response: safeJson(text) });
      else
        ctx.io.stdout.write(
          `${res.statusCode} ${text}\nsent ${event.event_id} (${opts.type}); see it with: npx postroom inbox show ${event.event_id}\n`,
        );
      if (res.statusCode >= 300) ctx.exitCode = 1;
    });
}

async function resolveSecret(file: string | undefined, configured: string | undefined, dataDir: string): Promise<string> {
  if (file) {
    const fs = await import('node:fs/promises');
    try {
      const s = (await fs.readFile(file, 'utf8')).trim();
      if (s) return s;
    } catch (err) {
      throw new PostroomError('invalid_flag', `--secret-file: cannot read ${file}: ${(err as Error).message}`);
    }
    throw new PostroomError('invalid_flag', `--secret-file: ${file} is empty`);
  }
  const secret = configured ?? readDevSecret(dataDir);
  if (!secret)
    throw new PostroomError(
      'no_secret',
      `No signing secret: set POSTROOM_WEBHOOK_SECRETS, pass --secret-file, or start \`postroom serve\` once to generate the development secret in ${dataDir}.`,
    );
  return secret;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
