import type { ServerConfig, WardenConfig } from '../config/types.js';
import type { Logger } from '../core/logger.js';
import type { Feature } from '../core/routing/feature.js';
import type { PreparedOutputValidator } from '../features/repair/outputSchemaValidator.js';
import type { InputValidator } from '../features/validate/inputValidator.js';
import { IdleWork } from '../lib/idleWork.js';
import { plural } from '../lib/plural.js';
import { AJV_LOAD_STEPS } from '../lib/schema/dialectAjv.js';

/**
 * A compile slice stays short enough that a call arriving meanwhile is not held up noticeably;
 * one tool schema compiles in about a millisecond.
 */
const SLICE_MS = 4;
const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';
/** More tools than any catalogue has; beyond it a schema is compiled at its first call. */
const MAX_QUEUED = 10_000;

/**
 * Compiles the validators of listed tools ahead of their first call. Loading ajv and compiling a
 * dialect's meta-schema made the first call of a gateway process take hundreds of milliseconds
 * (measured in bench/firstCall.mjs), and each new tool's first call a few more; done here, in
 * short slices while the gateway is idle, a call finds its tool's validators already compiled.
 * The validators are the ones the stages use, shared across every settings in force, so what is
 * compiled here is what a call looks up.
 */
export function createSchemaWarmup(
  config: WardenConfig,
  deps: {
    readonly input: InputValidator;
    readonly output: PreparedOutputValidator;
    /** The servers in force by name, kept current across edits of the config. */
    readonly servers: ReadonlyMap<string, ServerConfig>;
    readonly logger: Logger;
  },
): Feature {
  const work = new IdleWork({ sliceMs: SLICE_MS, maxQueued: MAX_QUEUED });
  let loaded = false;
  const load = (): void => {
    if (loaded) return;
    loaded = true;
    for (const step of AJV_LOAD_STEPS) work.add(step);
    // Each validator builds a dialect's meta-schema at its first schema of that dialect, the
    // largest part of a first compile: the default dialect's, and draft-07's, which schemas
    // generated from zod declare.
    for (const $schema of [undefined, DRAFT_07]) {
      const schema = $schema === undefined ? {} : { $schema };
      work.add(() => deps.input.prepare(schema));
      work.add(() => deps.output.prepare({ outputSchema: schema }));
    }
  };
  // A server started with the gateway takes hundreds of milliseconds to answer its handshake,
  // time in which the gateway waits: loading ajv then costs the host nothing. A gateway of lazy
  // servers answers the host at once instead, and loads ajv when a server is started.
  if (config.servers.some((s) => !s.disabled && s.start !== 'lazy' && s.validateArguments)) load();
  return {
    onListsChanged: (upstream, kinds) => {
      // A sleeping server's tools are listed from its last listing; their first call starts it,
      // and its schemas are compiled once it is running and lists them.
      if (!kinds.includes('tools') || upstream.state === 'asleep') return;
      const validated =
        deps.servers.get(upstream.name)?.validateArguments ?? config.gateway.validateArguments;
      const tools = upstream.tools;
      if (tools.length === 0) return;
      load();
      for (const tool of tools) {
        if (validated) work.add(() => deps.input.prepare(tool.inputSchema));
        if (tool.outputSchema !== undefined) work.add(() => deps.output.prepare(tool));
      }
      work.add(() =>
        deps.logger.debug(
          `the schemas of server "${upstream.name}"'s ${plural(tools.length, 'tool')} are compiled, ahead of their first call`,
        ),
      );
    },
  };
}
