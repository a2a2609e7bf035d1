import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPE_TABLE, eventTypeTraits, eventTypesWhere, type EventTypeTraits } from '../../src/events/type-table.js';
import { EVENT_TYPE_NAMES, type EventTypeName } from '../../src/events/type-names.js';

/*
 * The @ts-expect-error lines are type tests: `npm run typecheck` fails if any of
 * them stops being an error.
 */
describe('the table of event types', () => {
  it('has one row per type the catalogue names, and nothing else', () => {
    expect(Object.keys(EVENT_TYPE_TABLE)).toEqual([...EVENT_TYPE_NAMES]);
    for (const type of EVENT_TYPE_NAMES) expect(eventTypeTraits(type)).toBe(EVENT_TYPE_TABLE[type]);
    expect(eventTypeTraits('correspondence.reopened')).toBeUndefined();
    expect(eventTypeTraits('__proto__')).toBeUndefined();
    expect(eventTypeTraits('toString')).toBeUndefined();
  });

  it('refuses, at compile time, a table that leaves a type out', () => {
    const { 'webhook.test': omitted, ...rest } = EVENT_TYPE_TABLE;
    // @ts-expect-error webhook.test has no row
    const missing: Record<EventTypeName, EventTypeTraits> = rest;
    expect(Object.keys(missing)).not.toContain('webhook.test');
    expect(omitted.delivery).toBe('on_request');
  });

  it('states what the reconciler relies on', () => {
    // Only an event about a file can be looked for in a re-read, or be projected.
    for (const traits of Object.values(EVENT_TYPE_TABLE)) {
      if (traits.about !== 'correspondence') expect(traits).toMatchObject({ projection: 'none', reread: 'nothing' });
    }
    // What the projection compares with the service a re-read can show again, so such a gap can close.
    expect(eventTypesWhere((t) => t.consumed === 'always')).toEqual(eventTypesWhere((t) => t.reread !== 'nothing'));
    expect(eventTypesWhere((t) => t.delivery === 'on_request')).toEqual(['webhook.test']);
    expect(eventTypesWhere((t) => t.reread === 'participant_state')).toEqual(['claim.claimed', 'claim.expired']);
  });
});

/** The modules that decide per type, each of which must fail to compile when a name is added to the union. */
const DECIDING = [
  'src/events/catalogue.ts',
  'src/events/type-table.ts',
  'src/projection/facts.ts',
  'src/reconciler/synthetic.ts',
  'src/sandbox/catalogue.ts',
];

describe('adding an event type', () => {
  it('does not compile until every module that decides per type has decided', () => {
    const root = path.resolve(import.meta.dirname, '../..');
    const typeNames = path.join(root, 'src/events/type-names.ts');
    const parsed = ts.getParsedCommandLineOfConfigFile(
      path.join(root, 'tsconfig.json'),
      {},
      { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
    );
    const options = { ...parsed!.options, noEmit: true };
    const host = ts.createCompilerHost(options);
    const readFile = host.readFile.bind(host);
    host.readFile = (file) => {
      const text = readFile(file);
      if (path.resolve(file) !== typeNames || text === undefined) return text;
      const added = text.replace("  'webhook.test',\n", "  'webhook.test',\n  'correspondence.reopened',\n");
      expect(added).not.toBe(text);
      return added;
    };
    const program = ts.createProgram(
      DECIDING.map((f) => path.join(root, f)),
      options,
      host,
    );
    const failing = new Set<string>();
    for (const file of DECIDING) {
      const diagnostics = program.getSemanticDiagnostics(program.getSourceFile(path.join(root, file)));
      if (diagnostics.some((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n').includes('correspondence.reopened')))
        failing.add(file);
    }
    expect([...failing].sort()).toEqual([...DECIDING].sort());
  });
});
