/**
 * The built chunks reach each other's exports on every call (`require_errors.WardenError`, and
 * so on): those must be plain properties, not getters, so that reading one is a load and not a
 * function call. A getter stays only for a binding that can change after its chunk has run.
 */
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { ROOT } from './harness.js';

const CHUNKS = path.join(ROOT, 'dist/chunks');
const chunkFiles = (): string[] => readdirSync(CHUNKS).filter((name) => name.endsWith('.cjs'));

/** The exports of `file` that are getters: `name → local`. */
function getterExports(code: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const match of code.matchAll(
    /^Object\.defineProperty\(exports, "([\w$]+)", \{\s*enumerable: true,\s*get: function\(\) \{\s*return ([\w$]+);/gm,
  ))
    found.set(match[1]!, match[2]!);
  return found;
}

describe('the bundle', () => {
  it('exports every binding that never changes as a plain property', () => {
    const getters: string[] = [];
    for (const file of chunkFiles()) {
      const code = readFileSync(path.join(CHUNKS, file), 'utf8');
      for (const [name, local] of getterExports(code)) {
        // A live binding keeps its getter: a `let`, or a `var` the chunk assigns again.
        const live =
          new RegExp(`^let ${local.replace(/\$/g, '\\$')}\\b`, 'm').test(code) ||
          new RegExp(`^\\s*${local.replace(/\$/g, '\\$')}\\s*=[^=]`, 'm').test(code);
        if (!live) getters.push(`${file}: ${name}`);
      }
    }
    expect(getters).toEqual([]);
    expect(chunkFiles().length).toBeGreaterThan(10);
  });

  it('gives a chunk that requires it the exported values themselves', () => {
    const file = chunkFiles().find((name) =>
      readFileSync(path.join(CHUNKS, name), 'utf8').startsWith('// dist/core/errors.js'),
    );
    expect(file).toBeDefined();
    const errors = createRequire(import.meta.url)(path.join(CHUNKS, file!)) as Record<string, unknown>;
    const descriptor = Object.getOwnPropertyDescriptor(errors, 'WardenError');
    expect(descriptor?.get).toBeUndefined();
    expect(typeof descriptor?.value).toBe('function');
    expect(
      new (errors.DeniedError as new (message: string, rule: string | null) => Error)('denied', null),
    ).toBeInstanceOf(errors.WardenError as new () => Error);
  });
});
