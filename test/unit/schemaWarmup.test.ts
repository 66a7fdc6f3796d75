/**
 * Validators compiled ahead of a tool's first call must cost neither start-up nor the host's
 * first requests (nothing before the host has been answered and gone quiet), nor memory without
 * bound (at most 100 compiled ahead), and must not load ajv for schemas checked without it. The
 * checks that need no ajv are built right after the listing, since a host calls at once.
 */
import { describe, expect, it } from 'vitest';
import type { WardenConfig } from '../../src/config/types.js';
import type { Logger } from '../../src/core/logger.js';
import type { Upstream } from '../../src/core/upstreams/upstream.js';
import { createInputValidator } from '../../src/features/validate/inputValidator.js';
import { createOutputValidator } from '../../src/features/repair/outputSchemaValidator.js';
import { createSchemaWarmup } from '../../src/gateway/schemaWarmup.js';

const config = { servers: [], gateway: { validateArguments: true } } as unknown as WardenConfig;
const logger = { debug: () => {} } as unknown as Logger;

function setUp() {
  const input = createInputValidator();
  const output = createOutputValidator();
  /** When the host's latest request arrived, as the gateway tells the warm-up. */
  const host = { lastRequest: 0 };
  const warmup = createSchemaWarmup(config, {
    input,
    output,
    servers: new Map(),
    logger,
    lastHostRequest: () => host.lastRequest,
  });
  return { input, output, warmup, host };
}

function upstreamWith(tools: Record<string, unknown>[]): Upstream {
  return { name: 'a', state: 'running', tools } as unknown as Upstream;
}

const complex = (i: number) => ({
  name: `t${i}`,
  inputSchema: { type: 'object', properties: { s: { type: 'string', not: { const: `x${i}` } } } },
});

describe('compiling ahead of the first call', () => {
  it('waits until the host has been answered and is quiet, then compiles at most 100', async () => {
    const { input, warmup } = setUp();
    warmup.onListsChanged!(upstreamWith(Array.from({ length: 150 }, (_, i) => complex(i))), ['tools']);
    // Nothing while the host has not been answered, however long that takes.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(input.stats.compiled).toBe(0);
    warmup.beforeHostWrite!();
    await expect.poll(() => input.stats.compiled, { timeout: 10_000 }).toBe(100);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(input.stats.compiled).toBe(100);
  });

  it('loads no ajv for schemas checked without it', async () => {
    const { input, output, warmup } = setUp();
    const simple = {
      name: 's',
      inputSchema: { type: 'object', properties: { a: { type: 'number' } } },
      outputSchema: { type: 'object', properties: { b: { type: 'string' } } },
    };
    warmup.onListsChanged!(upstreamWith([simple, complex(1)]), ['tools']);
    warmup.beforeHostWrite!();
    await expect.poll(() => input.stats.compiled, { timeout: 10_000 }).toBe(1);
    expect(input.checkedWithoutAjv(simple.inputSchema)).toBe(true);
    expect(output.stats.ajvInstances).toBe(0);
  });

  it('builds the checks that need no ajv as the tools are listed, before the host is answered', async () => {
    const { input, output } = setUp();
    const asked: unknown[] = [];
    const watched = {
      ...input,
      checkedWithoutAjv: (schema: unknown) => {
        asked.push(schema);
        return input.checkedWithoutAjv(schema);
      },
    };
    const warmup = createSchemaWarmup(config, {
      input: watched,
      output,
      servers: new Map(),
      logger,
      lastHostRequest: () => 0,
    });
    const tools = Array.from({ length: 40 }, (_, i) => ({
      name: `s${i}`,
      inputSchema: { type: 'object', properties: { a: { type: 'number' } } },
    }));
    warmup.onListsChanged!(upstreamWith(tools), ['tools']);
    // The first ones at once, so the answer to the host's tools/list finds them built even when
    // the host calls the moment it has it; the rest in short slices, still without the host's
    // quiet (no host write has happened here at all).
    expect(asked).toEqual(tools.slice(0, 32).map((t) => t.inputSchema));
    await expect.poll(() => asked.length, { timeout: 10_000 }).toBe(40);
    expect(asked).toEqual(tools.map((t) => t.inputSchema));
    expect(input.stats.compiled).toBe(0);
  });

  it('holds when a host request arrives, from the step after the one in progress, until quiet again', async () => {
    const { input, warmup, host } = setUp();
    warmup.onListsChanged!(upstreamWith(Array.from({ length: 150 }, (_, i) => complex(i))), ['tools']);
    warmup.beforeHostWrite!();
    await expect.poll(() => input.stats.compiled, { timeout: 10_000 }).toBeGreaterThan(0);
    // A request arrives while the work runs: no step starts after the one that was running.
    host.lastRequest = performance.now();
    const atArrival = input.stats.compiled;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(input.stats.compiled).toBe(atArrival);
    // The request may still be running (a call of minutes), but the host has been quiet for
    // long enough: the work goes on without waiting for its answer.
    await expect.poll(() => input.stats.compiled, { timeout: 10_000 }).toBe(100);
  });

  it('starts no step while requests keep arriving', async () => {
    const { input, warmup, host } = setUp();
    warmup.onListsChanged!(upstreamWith(Array.from({ length: 10 }, (_, i) => complex(i))), ['tools']);
    warmup.beforeHostWrite!();
    const arriving = setInterval(() => (host.lastRequest = performance.now()), 50);
    try {
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(input.stats.compiled).toBe(0);
      expect(input.stats.ajvInstances).toBe(0);
    } finally {
      clearInterval(arriving);
    }
    await expect.poll(() => input.stats.compiled, { timeout: 10_000 }).toBe(10);
  });

  it('readies ajv in pieces of their own: the meta-schema check, the instance, then each compile', () => {
    const input = createInputValidator();
    const schema = complex(1).inputSchema;
    // Run from source the meta-schema check comes with ajv; from the build it is loaded first,
    // as a step of its own.
    let steps = 0;
    for (
      let step = input.readyStep(schema);
      step !== undefined && steps < 5;
      step = input.readyStep(schema)
    ) {
      step();
      steps++;
    }
    expect(steps).toBeGreaterThanOrEqual(1);
    expect(steps).toBeLessThanOrEqual(2);
    expect(input.stats.ajvInstances).toBe(1);
    expect(input.stats.compiled).toBe(0);
    input.prepare(schema);
    expect(input.stats.compiled).toBe(1);
    expect(input.stats.ajvInstances).toBe(1);
    expect(input.check(schema, { s: 'x1' })).toMatchObject({ kind: 'invalid' });
  });
});
