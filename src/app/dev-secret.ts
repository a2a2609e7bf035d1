import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const DEV_SECRET_FILE = 'dev-webhook-secret';

/**
 * With no secret configured in development, postroom makes one and keeps it in
 * the data folder (mode 0600), so restarts and `postroom send-sample` agree on it.
 */
export function loadOrCreateDevSecret(dataDir: string): { secret: string; file: string; created: boolean } {
  const file = path.join(dataDir, DEV_SECRET_FILE);
  try {
    const secret = fs.readFileSync(file, 'utf8').trim();
    if (secret) return { secret, file, created: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true });
  const secret = `whsec_dev_${randomBytes(24).toString('hex')}`;
  fs.writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return { secret, file, created: true };
}

export function readDevSecret(dataDir: string): string | undefined {
  try {
    return fs.readFileSync(path.join(dataDir, DEV_SECRET_FILE), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
