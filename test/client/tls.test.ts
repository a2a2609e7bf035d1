import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClientFromConfig, type ApiError } from '../../src/client/index.js';
import { loadConfig } from '../../src/config/config.js';
import { API_KEY, caught } from './support.js';

const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures/tls');
const file = (name: string): string => path.join(dir, name);

/** A gateway that, like the tier-1 one, refuses a connection without a client certificate from its CA. */
describe('tier-1 client certificate', () => {
  let server: https.Server;
  let base: string;

  beforeAll(async () => {
    server = https.createServer(
      {
        key: fs.readFileSync(file('server-key.pem')),
        cert: fs.readFileSync(file('server.pem')),
        ca: fs.readFileSync(file('ca.pem')),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (req, res) => {
        const peer = (req.socket as TLSSocket).getPeerCertificate();
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ organization_id: 'org_tier1', client_cn: peer.subject?.CN }));
      },
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('presents the certificate from POSTROOM_API_CLIENT_CERT_FILE / KEY_FILE and trusts POSTROOM_API_CA_FILE', async () => {
    const client = createApiClientFromConfig(
      loadConfig({
        POSTROOM_API_BASE_URL: base,
        POSTROOM_API_KEY: API_KEY,
        POSTROOM_API_CLIENT_CERT_FILE: file('client.pem'),
        POSTROOM_API_CLIENT_KEY_FILE: file('client-key.pem'),
        POSTROOM_API_CA_FILE: file('ca.pem'),
      }),
    );
    try {
      expect(await client.me()).toMatchObject({ organization_id: 'org_tier1', client_cn: 'postroom tier-1 sender' });
    } finally {
      await client.close();
    }
  });

  it('without the certificate the gateway refuses the connection', async () => {
    const client = createApiClientFromConfig(
      loadConfig({
        POSTROOM_API_BASE_URL: base,
        POSTROOM_API_KEY: API_KEY,
        POSTROOM_API_CA_FILE: file('ca.pem'),
        POSTROOM_API_MAX_ATTEMPTS: '1',
      }),
    );
    try {
      const err = (await caught(client.me())) as ApiError;
      expect(err.code).toBe('network_error');
      expect(err.status).toBeUndefined();
    } finally {
      await client.close();
    }
  });

  it('a certificate without its key, or an unreadable file, is a configuration error naming the setting', () => {
    expect(() =>
      createApiClientFromConfig(
        loadConfig({ POSTROOM_API_BASE_URL: base, POSTROOM_API_KEY: API_KEY, POSTROOM_API_CLIENT_CERT_FILE: file('client.pem') }),
      ),
    ).toThrow(/POSTROOM_API_CLIENT_KEY_FILE/);
    expect(() =>
      createApiClientFromConfig(
        loadConfig({
          POSTROOM_API_BASE_URL: base,
          POSTROOM_API_KEY: API_KEY,
          POSTROOM_API_CLIENT_CERT_FILE: file('nope.pem'),
          POSTROOM_API_CLIENT_KEY_FILE: file('client-key.pem'),
        }),
      ),
    ).toThrow(/POSTROOM_API_CLIENT_CERT_FILE: cannot read/);
  });
});
