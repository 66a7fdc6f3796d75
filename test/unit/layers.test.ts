import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * The import rules of docs/architecture.md, checked on the source itself:
 *   lib/ imports nothing of ours; config/ only lib/; core/ only lib/ and config/;
 *   a feature only lib/, config/, core/ and its own folder; gateway, cli and commands anything.
 * And no import cycle anywhere, type-only imports included (they still couple the modules).
 */

const SRC = path.resolve(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sources(file);
    return name.endsWith('.ts') ? [file] : [];
  });
}

/** The relative imports of a module, as paths of .ts files under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
    const target = path.resolve(path.dirname(file), match[1]!).replace(/\.js$/, '.ts');
    found.push(target);
  }
  return found;
}

/** `lib`, `config`, `core`, `feature:<name>` or `top`. */
function layerOf(file: string): string {
  const [first, second] = path.relative(SRC, file).split(path.sep);
  if (first === 'lib' || first === 'config' || first === 'core') return first;
  if (first === 'features') return `feature:${second}`;
  return 'top';
}

const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  lib: ['lib'],
  config: ['lib', 'config'],
  core: ['lib', 'config', 'core'],
};

function allowed(from: string, to: string): boolean {
  if (from === 'top') return true;
  if (from.startsWith('feature:')) return ['lib', 'config', 'core', from].includes(to);
  return MAY_IMPORT[from]!.includes(to);
}

const files = sources(SRC);
const graph = new Map(files.map((f) => [f, importsOf(f)]));

describe('layers', () => {
  it('every import points down a layer, or stays inside its own folder', () => {
    const wrong: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) {
        if (!allowed(layerOf(file), layerOf(target)))
          wrong.push(`${path.relative(SRC, file)} → ${path.relative(SRC, target)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('has no import cycle', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (file: string): void => {
      state.set(file, 'open');
      stack.push(file);
      for (const target of graph.get(file) ?? []) {
        if (state.get(target) === 'open') {
          const loop = stack.slice(stack.indexOf(target)).map((f) => path.relative(SRC, f));
          cycles.push(loop.join(' → '));
        } else if (!state.has(target) && graph.has(target)) visit(target);
      }
      stack.pop();
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });

  it('every import names a file that exists', () => {
    const missing = [...graph].flatMap(([file, targets]) =>
      targets.filter((t) => !graph.has(t)).map((t) => `${path.relative(SRC, file)} → ${t}`),
    );
    expect(missing).toEqual([]);
  });
});
