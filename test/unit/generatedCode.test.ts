import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Script } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { CODE_CACHE_SUFFIX, requireGenerated, wrapCommonJs } from '../../src/lib/generatedCode.js';

/** A generated-like module: a function on module.exports, a helper from require(), its own path. */
const SOURCE = `"use strict";
const { basename } = require('node:path');
module.exports = function check(data) { return typeof data === 'number' && data > 1; };
module.exports.file = basename(__filename);
module.exports.dir = __dirname;`;

function moduleFile(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'warden-generated-'));
  const file = path.join(dir, 'check.cjs');
  writeFileSync(file, SOURCE);
  return file;
}

type Check = ((data: unknown) => boolean) & { file: string; dir: string };

function expectWorking(exports: unknown, file: string): void {
  const check = exports as Check;
  expect(check(2)).toBe(true);
  expect(check('2')).toBe(false);
  expect(check.file).toBe('check.cjs');
  expect(check.dir).toBe(path.dirname(file));
}

describe('a generated module', () => {
  it('loads without a code cache, as require() would', () => {
    const file = moduleFile();
    expectWorking(requireGenerated(file), file);
  });

  it('loads from the code cache the build writes beside it', () => {
    const file = moduleFile();
    const script = new Script(wrapCommonJs(SOURCE), { filename: file });
    writeFileSync(`${file}${CODE_CACHE_SUFFIX}`, script.createCachedData());
    expectWorking(requireGenerated(file), file);
  });

  it('loads all the same when V8 rejects the cache (another Node, other flags)', () => {
    const file = moduleFile();
    writeFileSync(`${file}${CODE_CACHE_SUFFIX}`, Buffer.from('not a code cache'));
    expectWorking(requireGenerated(file), file);
  });
});
