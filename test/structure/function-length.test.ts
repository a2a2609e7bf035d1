import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * No function in src/ is longer than a reader can hold: MAX_LINES from its
 * declaration to its closing brace, nested functions included (a factory's
 * closures count towards the factory). Split a longer one into functions named
 * for what they do.
 */
const MAX_LINES = 120;
const SRC = path.resolve(import.meta.dirname, '../../src');

interface LongFunction {
  where: string;
  lines: number;
}

function nameOf(node: ts.SignatureDeclaration, source: ts.SourceFile): string {
  if (node.name) return node.name.getText(source);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent) || ts.isPropertyDeclaration(parent))
    return parent.name.getText(source);
  return '(anonymous)';
}

/** Every function-like node with a body in `text` longer than `max` lines. */
function longFunctions(fileName: string, text: string, max: number): LongFunction[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true);
  const found: LongFunction[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > max) found.push({ where: `${fileName}:${first + 1} ${nameOf(node, source)}`, lines });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
  });
}

describe('function length', () => {
  it(`finds no function in src/ over ${MAX_LINES} lines`, () => {
    const long = sources(SRC).flatMap((file) => longFunctions(path.relative(SRC, file), fs.readFileSync(file, 'utf8'), MAX_LINES));
    expect(long.map((f) => `${f.where} (${f.lines} lines)`)).toEqual([]);
  });

  it('counts every kind of function, nested closures towards their factory', () => {
    const body = (n: number): string => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = [
      `export function declared() {\n${body(5)}\n}`,
      `const arrow = () => {\n${body(5)}\n};`,
      `class C {\n  method() {\n${body(5)}\n  }\n}`,
      `export function factory() {\n  const inner = () => {\n${body(3)}\n  };\n  return { inner, get value() {\n${body(2)}\n    return 1;\n  } };\n}`,
    ].join('\n');
    const found = longFunctions('probe.ts', text, 6).map((f) => `${f.where} ${f.lines}`);
    expect(found).toEqual(['probe.ts:1 declared 7', 'probe.ts:8 arrow 7', 'probe.ts:16 method 7', 'probe.ts:24 factory 12']);
  });
});
