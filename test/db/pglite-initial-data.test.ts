import fs from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { describe, expect, inject, it } from 'vitest';
import { createPgliteDb } from '../../src/db/pglite.js';

describe('embedded store (PGlite) started from a data folder dump', () => {
  it('holds what the dump held and is its own copy; refuses a dump together with a data folder', async () => {
    // Made from the run's new data folder (test/support/global-setup.ts), not by initdb: 3 to 4 s less.
    const source = await PGlite.create({ loadDataDir: new Blob([await fs.readFile(inject('pgliteTemplate'))]) });
    await source.exec('CREATE TABLE public.seeded (v int); INSERT INTO public.seeded VALUES (7);');
    const dump = await source.dumpDataDir('none');
    await source.close();

    const first = await createPgliteDb({ dataDir: undefined, initialData: dump });
    const second = await createPgliteDb({ dataDir: undefined, initialData: dump });
    try {
      await first.exec('INSERT INTO public.seeded VALUES (8)');
      expect((await first.query<{ v: number }>('SELECT v FROM public.seeded ORDER BY v')).rows).toEqual([{ v: 7 }, { v: 8 }]);
      expect((await second.query<{ v: number }>('SELECT v FROM public.seeded ORDER BY v')).rows).toEqual([{ v: 7 }]);
    } finally {
      await first.close();
      await second.close();
    }

    await expect(createPgliteDb({ dataDir: '/tmp/not-used', initialData: dump })).rejects.toThrow(/in-memory/);
  });
});
