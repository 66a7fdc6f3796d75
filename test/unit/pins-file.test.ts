import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import {
  addPins,
  formatPinFile,
  newPin,
  parsePinText,
  readPinFile,
  type PinEntry,
} from '../../src/features/pins/pinFile.js';
import { definitionHash, pinnedDefinition } from '../../src/features/pins/toolDefinitionHash.js';
import { rejectedIssues, thrownIssues } from './configIssues.js';

const AT = new Date('2026-01-02T03:04:05.000Z');

const tool = (name: string, description = `The ${name} tool.`): Tool => ({
  name,
  description,
  inputSchema: { type: 'object', properties: { z: { type: 'string' }, a: { type: 'number' } } },
});

const entry = (server: string, t: Tool, at = AT): PinEntry => ({
  server,
  tool: t.name,
  pin: newPin(pinnedDefinition(t), at),
});

function tempFile(): string {
  return path.join(mkdtempSync(path.join(tmpdir(), 'warden-pins-')), 'tool-pins.json');
}

describe('pins file: reading', () => {
  it('a missing or empty file holds no pins', () => {
    const file = tempFile();
    expect(readPinFile(file)).toEqual({ pins: new Map(), text: undefined });
    writeFileSync(file, '\n');
    expect(readPinFile(file).pins.size).toBe(0);
  });

  it('reads back what it writes', () => {
    const file = tempFile();
    const written = addPins(file, [entry('fs', tool('read')), entry('mem', tool('get'))], { replace: false });
    const read = readPinFile(file);
    expect(read.text).toBe(written.text);
    expect(read.pins).toEqual(written.pins);
    expect(read.pins.get('fs')?.get('read')).toEqual({
      sha256: definitionHash(tool('read')),
      pinnedAt: '2026-01-02T03:04:05.000Z',
      definition: tool('read'),
    });
  });

  const F = '/pins/tool-pins.json';
  const valid = () =>
    JSON.parse(formatPinFile(new Map([['fs', new Map([['read', entry('fs', tool('read')).pin]])]])));
  const text = (value: unknown) => JSON.stringify(value, null, 2);

  it.each([
    [
      'not JSON, at the line and column where parsing stopped',
      '{\n  "version": 1,\n  "pins": {,\n}',
      [`${F}:3:12: not valid JSON: `],
    ],
    ['a list at the top', '[]', [`${F}: expected a JSON object with "version" and "pins", got a list`]],
  ])('%s', (_what, source, expected) => {
    const issues = thrownIssues(() => parsePinText(source, F));
    expect(issues).toHaveLength(expected.length);
    issues.forEach((issue, i) => expect(issue.startsWith(expected[i]!)).toBe(true));
  });

  it('names every problem of a file of the wrong shape, with its line and key', () => {
    const data = valid();
    data.version = 2;
    data.extra = true;
    data.pins.fs.read.sha256 = 'abc';
    data.pins.fs.read.definition.descripton = 'typo';
    data.pins.mem = { get: { sha256: '0'.repeat(64), pinnedAt: 'yesterday', definition: { name: 'put' } } };
    expect(thrownIssues(() => parsePinText(text(data), F))).toEqual([
      `${F}:36:3: extra: unknown key "extra"; allowed keys are: version, pins`,
      `${F}:35:14: version: this mcp-warden reads pins files of version 1, got a number (2)`,
      `${F}:22:19: pins.fs.read.sha256: expected 64 lowercase hex digits, got a string`,
      `${F}:19:11: pins.fs.read.definition.descripton: unknown key "descripton" (did you mean "description"?)`,
      `${F}:28:21: pins.mem.get.pinnedAt: expected an ISO 8601 date and time, got a string`,
      `${F}:30:19: pins.mem.get.definition.name: must be the tool's name, "get" (the key it is pinned under)`,
    ]);
  });

  it('refuses a definition edited without its hash (or the other way round)', () => {
    const data = valid();
    data.pins.fs.read.definition.description = 'Edited by hand.';
    expect(thrownIssues(() => parsePinText(text(data), F))).toEqual([
      expect.stringMatching(
        /^\/pins\/tool-pins.json:\d+:\d+: pins.fs.read.sha256: does not match the definition next to it/,
      ),
    ]);
  });

  it('names the file when it cannot be read', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'warden-pins-'));
    expect(await rejectedIssues(async () => readPinFile(dir))).toEqual([
      `${dir}: cannot read pins file: EISDIR: illegal operation on a directory, read`,
    ]);
  });
});

describe('pins file: writing', () => {
  it('writes pretty JSON with every key sorted, mode 0600, and no temporary file left', () => {
    const file = tempFile();
    addPins(file, [entry('zeta', tool('b')), entry('alpha', tool('c')), entry('alpha', tool('a'))], {
      replace: false,
    });
    const text = readFileSync(file, 'utf8');
    expect(text.endsWith('}\n')).toBe(true);
    expect(text).toContain('\n  "pins": {\n    "alpha": {\n      "a": {\n        "definition": {');
    const keyOrder = [...text.matchAll(/^\s*"([^"]+)":/gm)].map((m) => m[1]);
    expect(keyOrder.slice(0, 12)).toEqual([
      'pins',
      'alpha',
      'a',
      'definition',
      'description',
      'inputSchema',
      'properties',
      'a',
      'type',
      'z',
      'type',
      'type',
    ]);
    expect(text.trimEnd().endsWith('"version": 1\n}')).toBe(true);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(path.dirname(file))).toEqual(['tool-pins.json']);
  });

  it('creates the folder, and writes nothing when nothing changes', () => {
    const file = path.join(path.dirname(tempFile()), 'new', 'dir', 'pins.json');
    expect(addPins(file, [entry('fs', tool('read'))], { replace: false }).written).toHaveLength(1);
    const before = statSync(file).mtimeMs;
    const again = addPins(file, [entry('fs', tool('read'), new Date())], { replace: false });
    expect(again.written).toEqual([]);
    expect(statSync(file).mtimeMs).toBe(before);
  });

  it('merges with what another writer added meanwhile, keeping its entries', () => {
    const file = tempFile();
    addPins(file, [entry('fs', tool('read'))], { replace: false });
    // Another gateway adds its own pin; this writer's view is now stale.
    const other = addPins(file, [entry('mem', tool('get'))], { replace: false });
    expect(other.pins.get('fs')?.has('read')).toBe(true);
    addPins(file, [entry('fs', tool('write'))], { replace: false });
    const pins = readPinFile(file).pins;
    expect([...pins.get('fs')!.keys()].sort()).toEqual(['read', 'write']);
    expect([...pins.get('mem')!.keys()]).toEqual(['get']);
  });

  it('first sight never replaces a pin another wrote; accepting does', () => {
    const file = tempFile();
    addPins(file, [entry('fs', tool('read', 'First.'))], { replace: false });
    const second = addPins(file, [entry('fs', tool('read', 'Second.'))], { replace: false });
    expect(second.written).toEqual([]);
    expect(readPinFile(file).pins.get('fs')?.get('read')?.definition.description).toBe('First.');
    const accepted = addPins(file, [entry('fs', tool('read', 'Second.'))], { replace: true });
    expect(accepted.written).toHaveLength(1);
    expect(readPinFile(file).pins.get('fs')?.get('read')?.definition.description).toBe('Second.');
  });

  it('never overwrites a file that is not a valid pins file', () => {
    const file = tempFile();
    writeFileSync(file, '{"version": 1, "pins": {"fs": 7}}');
    expect(thrownIssues(() => addPins(file, [entry('fs', tool('read'))], { replace: false }))).toEqual([
      `${file}:1:31: pins.fs: expected an object of tools, got a number (7)`,
    ]);
    expect(readFileSync(file, 'utf8')).toBe('{"version": 1, "pins": {"fs": 7}}');
  });
});
