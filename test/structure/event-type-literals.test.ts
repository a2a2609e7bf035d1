import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPE_NAMES } from '../../src/events/type-names.js';

/**
 * What is type-specific about an event is decided in src/events (the type table) or in a module that must
 * decide per type through a Record<EventTypeName, …>. Outside src/events and src/sandbox (the service's
 * double), only those few modules and documentation examples name a type as a string literal: a new place
 * that needs a type's behaviour reads it from the table, or a named constant such as TEST_EVENT_TYPE.
 */
const SRC = path.resolve(import.meta.dirname, '../../src');
// The fourth names one in an example of its --help (a curl that registers an endpoint with the sandbox).
const ALLOWED = ['app/postroom.ts', 'cli/commands/sandbox.ts', 'projection/facts.ts', 'reconciler/synthetic.ts'];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return /\.tsx?$/.test(e.name) ? [full] : [];
  });
}

describe('event type names outside src/events and src/sandbox', () => {
  it('appear literally in at most four files, the ones that decide per type or document the API', () => {
    const literal = new RegExp(`['"\`](${EVENT_TYPE_NAMES.map((n) => n.replace('.', '\\.')).join('|')})['"\`]`);
    const naming = sourceFiles(SRC)
      .map((f) => path.relative(SRC, f).split(path.sep).join('/'))
      .filter((rel) => !rel.startsWith('events/') && !rel.startsWith('sandbox/'))
      .filter((rel) => literal.test(fs.readFileSync(path.join(SRC, rel), 'utf8')))
      .sort();
    expect(naming.length).toBeLessThanOrEqual(4);
    expect(naming).toEqual(ALLOWED);
  });
});
