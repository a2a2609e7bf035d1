import { describe, expect, it } from 'vitest';
import { selectStoreKinds } from '../support/db.js';

// The test helper that decides which stores the store-parametrised suites run on: CI relies on it to fail, not
// skip, when it asked for Postgres and none answers.
describe('selectStoreKinds', () => {
  it('runs on both stores when Postgres answers and on PGlite alone when it does not', () => {
    expect(selectStoreKinds(true, undefined)).toEqual(['postgres', 'pglite']);
    expect(selectStoreKinds(false, undefined)).toEqual(['pglite']);
    expect(selectStoreKinds(false, '')).toEqual(['pglite']);
  });

  it('keeps only the stores POSTROOM_TEST_STORES names', () => {
    expect(selectStoreKinds(true, 'postgres')).toEqual(['postgres']);
    expect(selectStoreKinds(true, 'pglite')).toEqual(['pglite']);
    expect(selectStoreKinds(true, ' pglite , postgres ')).toEqual(['postgres', 'pglite']);
    expect(selectStoreKinds(false, 'pglite')).toEqual(['pglite']);
  });

  it('refuses a store it does not know', () => {
    expect(() => selectStoreKinds(true, 'postgres,mysql')).toThrow(/unknown store mysql/);
  });

  it('fails rather than skips when Postgres is asked for and none answers', () => {
    expect(() => selectStoreKinds(false, 'postgres')).toThrow(/asks for postgres, but none answers/);
    expect(() => selectStoreKinds(false, 'postgres,pglite')).toThrow(/asks for postgres/);
  });
});
