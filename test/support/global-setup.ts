import { adminUrl } from './db.js';

/** Says once, up front, which store the suites run against. */
export default async function setup(): Promise<void> {
  const url = await adminUrl();
  const where = url
    ? `Postgres at ${new URL(url).host}`
    : 'no Postgres answered: Postgres-only suites are skipped, the rest run on embedded PGlite';
  console.log(`[postroom tests] store: ${where}`);
}
