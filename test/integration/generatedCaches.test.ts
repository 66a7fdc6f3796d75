/**
 * The code the build generated (validators, meta-schemas) is compiled from the code cache the
 * build wrote beside it, also once a serving gateway has changed V8's flags, under which V8
 * would refuse a cache made under its own (lib/v8Flags.ts).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { connectHost, FAST_GATEWAY, fixture, tempDir, writeConfig, type HostSession } from './harness.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RECORDER = path.join(ROOT, 'test/fixtures/recordImports.mjs');

let host: HostSession | undefined;
afterEach(async () => {
  await host?.close();
  host = undefined;
});

interface GeneratedLoad {
  readonly file: string;
  readonly fromCache: boolean;
}

/** The generated modules a gateway loaded while the host called `tool` with `args`, and how. */
async function generatedLoadsOfCall(tool: string, args: Record<string, unknown>) {
  const dir = tempDir();
  const loads = path.join(dir, 'generated.jsonl');
  const config = writeConfig({ gateway: FAST_GATEWAY, servers: { up: fixture() } }, dir);
  host = await connectHost(config, {
    env: { NODE_OPTIONS: `--import ${RECORDER}`, WARDEN_GENERATED_FILE: loads },
  });
  const result = await host.client.callTool({ name: tool, arguments: args });
  await host.close();
  host = undefined;
  const loaded = readFileSync(loads, 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as GeneratedLoad)
    .map(({ file, fromCache }) => ({ file: path.relative(ROOT, file), fromCache }));
  return { result, loaded };
}

describe('the built gateway', () => {
  it('compiles the meta-schema check from its cache when a call is first checked by ajv, after serving set its flags', async () => {
    // Arguments that do not match are worded by ajv, whose schema is checked against its
    // dialect's meta-schema first.
    const { result, loaded } = await generatedLoadsOfCall('up__echo', { text: 5 });
    expect(result.isError).toBe(true);
    expect(JSON.stringify(result.content)).toMatch(/text must be string/);
    expect(loaded).toContainEqual({ file: 'dist/chunks/generated/meta-2020-12.cjs', fromCache: true });
  });
});
