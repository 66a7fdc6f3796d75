/**
 * Config and policy files written as JSON skip the YAML parser (src/config/jsonSource.ts). That
 * fast path must give exactly what the YAML path gives: the same data, and the same line and
 * column for every key path, so every message keeps pointing at the same place.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseJsonText } from '../../src/config/jsonSource.js';
import { parseWithYaml, parseYamlSource, toPlainData } from '../../src/config/yamlSource.js';
import type { KeyPath } from '../../src/config/interpolate.js';

const FILE = '/srv/warden/proxy.config.json';

/** Every key path in `data`, and one that goes past each leaf, which must fall back alike. */
function keyPaths(data: unknown, prefix: KeyPath = []): KeyPath[] {
  const paths: KeyPath[] = [prefix, [...prefix, 'missing'], [...prefix, 0]];
  if (Array.isArray(data)) data.forEach((item, i) => paths.push(...keyPaths(item, [...prefix, i])));
  else if (typeof data === 'object' && data !== null)
    for (const [key, value] of Object.entries(data)) paths.push(...keyPaths(value, [...prefix, key]));
  return paths;
}

function expectSameAsYaml(text: string): void {
  const fast = parseYamlSource(text, FILE, 'config file');
  const slow = parseWithYaml(text, FILE, 'config file');
  expect(parseJsonText(text)).toBeDefined();
  const data = toPlainData(fast);
  expect(data).toEqual(toPlainData(slow));
  expect(fast.top).toEqual(slow.top);
  for (const keyPath of keyPaths(data)) {
    for (const at of ['key', 'value'] as const) {
      expect(fast.locator.position(keyPath, at), `${JSON.stringify(keyPath)} ${at}`).toEqual(
        slow.locator.position(keyPath, at),
      );
    }
    expect(fast.locator.orderedKeys(keyPath, { b: 1, a: 2, 10: 3, 2: 4, servers: 5 })).toEqual(
      slow.locator.orderedKeys(keyPath, { b: 1, a: 2, 10: 3, 2: 4, servers: 5 }),
    );
  }
}

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('JSON files: the fast path agrees with the YAML parser', () => {
  const tricky = {
    servers: {
      'a.b': { command: 'npx', args: ['-y', 'x', '--flag=1'], env: { TOKEN: '${TOKEN}', EMPTY: '' } },
      '10': {
        url: 'https://example.com/mcp',
        headers: { 'X-Quote': 'say "hi" \\ \u00e9 \ud83d\ude00 \u2028' },
      },
      '2': { command: 'node', args: [], tools: { include: [], exclude: ['*'], timeouts: {} } },
    },
    gateway: { timeout: 90000, naming: { maxLength: -0, pattern: '^[a-z]{1,2}$' }, restart: null },
    policies: [true, false, null, 1.5e3, 2 ** 60],
    __proto__x: 1,
  };

  it.each([
    ['indented', JSON.stringify(tricky, null, 2)],
    ['on one line', JSON.stringify(tricky)],
    [
      'with tabs, CRLF and space around',
      `  \r\n${JSON.stringify(tricky, null, '\t').replaceAll('\n', '\r\n')}\r\n `,
    ],
    ['a "__proto__" key', '{"__proto__": {"x": 1}, "servers": {"a": {"command": "x"}}}'],
    ['escaped keys', '{"ser\\u0076ers": {"a\\"b": {"command": "x"}, "c\\\\d": {"url": "http://x"}}}'],
    ['empty collections', '{"servers": {}, "policies": [], "gateway": {"log": {}}}'],
    [
      'the shipped example as JSON',
      JSON.stringify(
        parseWithYaml(readFileSync(path.join(ROOT, 'proxy.config.yaml'), 'utf8'), FILE, 'x').toJS(),
        null,
        2,
      ),
    ],
    [
      'a shipped policy as JSON',
      JSON.stringify(
        parseWithYaml(readFileSync(path.join(ROOT, 'policies/default.yaml'), 'utf8'), FILE, 'x').toJS(),
        null,
        2,
      ),
    ],
  ])('%s', (_name, text) => expectSameAsYaml(text));

  it.each([
    ['YAML', 'servers:\n  a: { command: x }\n'],
    ['a syntax error', '{"servers": {"a": }'],
    ['a duplicate key', '{"servers": {"a": {"command": "x"}, "a": {"command": "y"}}}'],
    ['a list at the top', '[{"servers": {}}]'],
    ['a lone carriage return', '{"servers":\r{"a": {"command": "x"}}}'],
    ['nothing', ''],
  ])('leaves %s to the YAML parser', (_name, text) => {
    expect(parseJsonText(text)).toBeUndefined();
  });
});
