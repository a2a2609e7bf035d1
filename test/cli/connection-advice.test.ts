import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { connectionAdvice } from '../../src/db/connection-advice.js';
import { adminUrl } from '../support/db.js';
import { runCli } from '../support/cli.js';

const admin = await adminUrl();
const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

function listen(server: net.Server): Promise<number> {
  servers.push(server);
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
}

/** A Postgres ErrorResponse: severity, SQLSTATE and message fields, as a server (or PgBouncer) sends it. */
function errorResponse(sqlstate: string, message: string): Buffer {
  const fields = Buffer.from(`SFATAL\0VFATAL\0C${sqlstate}\0M${message}\0\0`, 'utf8');
  const head = Buffer.alloc(5);
  head.write('E', 0, 'latin1');
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

describe('CLI: what to do when Postgres cannot be reached as it should', () => {
  it('says what a pooler needs when PgBouncer refuses the startup parameters, and that transaction mode cannot serve', async () => {
    // What PgBouncer 1.18 answers postroom's pool in either pool mode (README, "Connection poolers").
    const port = await listen(
      net.createServer((socket) => {
        socket.once('data', () => socket.end(errorResponse('08P01', 'unsupported startup parameter: statement_timeout')));
        socket.on('error', () => undefined);
      }),
    );
    const r = await runCli(['inbox', 'list'], { DATABASE_URL: `postgres://postroom:s3cret-pw@127.0.0.1:${port}/app` });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/unsupported startup parameter: statement_timeout/);
    expect(r.stderr).toMatch(/ignore_startup_parameters = statement_timeout, options/);
    expect(r.stderr).toMatch(/Transaction mode cannot serve postroom/);
    expect(r.stderr).toMatch(/pool_mode = session/);
    expect(r.stderr).not.toMatch(/s3cret-pw/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('says Postgres is not reachable when nothing listens on the port', async () => {
    const closed = net.createServer();
    const port = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    servers.splice(servers.indexOf(closed), 1);
    const r = await runCli(['inbox', 'list'], { DATABASE_URL: `postgres://postroom:s3cret-pw@127.0.0.1:${port}/app` });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/ECONNREFUSED/);
    expect(r.stderr).toMatch(/Postgres is not reachable there/);
    expect(r.stderr).not.toMatch(/s3cret-pw/);
  });

  it.skipIf(!admin)('says which database is missing when DATABASE_URL names one that does not exist', async () => {
    const url = new URL(admin!);
    url.pathname = '/postroom_no_such_database';
    const r = await runCli(['inbox', 'list'], { DATABASE_URL: url.toString() });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/database "postroom_no_such_database" does not exist/);
    expect(r.stderr).toMatch(/create it \(createdb\), or name another in DATABASE_URL/);
  });

  it('points at the login for a refused password, and stays silent on errors it has no advice for', () => {
    const db = 'postgres://postroom@db.internal:6543/app';
    // Trust auth on the test server cannot refuse a login: the SQLSTATE Postgres sends for one (28P01).
    expect(connectionAdvice({ code: '28P01', message: 'password authentication failed for user "postroom"' }, db)).toMatch(
      /check the user and password in DATABASE_URL/,
    );
    expect(connectionAdvice(new Error('relation "inbox" does not exist'), db)).toBeUndefined();
    expect(connectionAdvice(undefined, db)).toBeUndefined();
  });

  it('gives Postgres advice for a network error only when it is about the server DATABASE_URL names', () => {
    const db = 'postgres://postroom@db.internal:6543/app';
    const refused = (port: number) => Object.assign(new Error(`connect ECONNREFUSED 10.0.0.5:${port}`), { code: 'ECONNREFUSED', port });
    expect(connectionAdvice(refused(6543), db)).toMatch(/Postgres is not reachable there/);
    // Another peer's port (the service's API, a webhook target), or no DATABASE_URL (the embedded store): not Postgres.
    expect(connectionAdvice(refused(8443), db)).toBeUndefined();
    expect(connectionAdvice(refused(6543), undefined)).toBeUndefined();
    expect(connectionAdvice(refused(5432), 'postgres://postroom@db.internal/app')).toMatch(/not reachable/);
    // A host with several addresses: one error per address, in an AggregateError.
    expect(connectionAdvice(new AggregateError([refused(6543), refused(6543)], 'connect failed'), db)).toMatch(/not reachable/);
    const unresolved = (hostname: string) => Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname });
    expect(connectionAdvice(unresolved('db.internal'), db)).toMatch(/not reachable/);
    expect(connectionAdvice(unresolved('api.example'), db)).toBeUndefined();
  });
});
