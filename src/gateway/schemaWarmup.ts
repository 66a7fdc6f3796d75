import type { ServerConfig, WardenConfig } from '../config/types.js';
import type { Logger } from '../core/logger.js';
import type { Feature } from '../core/routing/feature.js';
import type { PreparedOutputValidator } from '../features/repair/outputSchemaValidator.js';
import type { InputValidator } from '../features/validate/inputValidator.js';
import { IdleWork } from '../lib/idleWork.js';
import { plural } from '../lib/plural.js';
import { ajvLoadSteps } from '../lib/schema/dialectAjv.js';

/**
 * A compile slice stays short enough that a call arriving meanwhile is not held up noticeably;
 * one tool schema compiles in about a millisecond.
 */
const SLICE_MS = 4;
/** A slice of the checks built without ajv, which start before the host has gone quiet. */
const SOON_SLICE_MS = 0.5;
/**
 * Tools of one listing whose ajv-free checks are built as the listing is handled, before the
 * host's tools/list is answered: the ones listed first, those a host is likely to call first.
 * Each costs microseconds once the code is warm (well under a millisecond for all of them).
 */
const BUILT_AT_ONCE = 32;
/**
 * How long the host must have been sent nothing before the work starts. A host that has just
 * been answered usually asks again at once (it lists, then calls); loading ajv (tens of
 * milliseconds in one piece) must not land in that burst, nor in the gateway's start-up.
 */
const QUIET_MS = 200;
/**
 * Validators compiled ahead, over the life of the gateway. Each holds generated code (a few
 * kilobytes); a catalogue of thousands of tools would otherwise double the gateway's memory for
 * tools most hosts never call. Past it, a schema is compiled at its tool's first call.
 */
const MAX_COMPILED_AHEAD = 100;
/**
 * Tools of one listing made ready ahead: the first ones listed, those a host is likely to call
 * first. The rest are made ready at their first call; a simple schema's check takes microseconds
 * to build then.
 */
const MAX_TOOLS_AHEAD = 200;
/** Steps waiting at most (listings, tools); the rest are dropped, and done at a first call. */
const MAX_QUEUED = 2_000;

/**
 * Gets the validators of listed tools ready ahead of their first call. Most schemas need no ajv
 * at all (lib/schema/simpleSchema.ts checks them), and then ajv (about 14 MB) is never loaded;
 * their checks are built as the tools are listed (see BUILT_AT_ONCE). The others are compiled
 * here once the host has been answered and has gone quiet, in short slices, so that neither
 * start-up nor the host's first requests wait for ajv to load. The
 * validators are the ones the stages use, shared across every settings in force, so what is
 * compiled here is what a call looks up.
 */
export function createSchemaWarmup(config: WardenConfig, deps: SchemaWarmupDeps): Feature {
  /** Listed tools' steps, held until the host is quiet. */
  const waiting: (() => void)[] = [];
  /** Checks built without ajv past BUILT_AT_ONCE: a call arriving waits for one short slice at most. */
  const soon = new IdleWork({ sliceMs: SOON_SLICE_MS, maxQueued: MAX_QUEUED });
  let compiledAhead = 0;
  let ajvLoaded = false;
  const host = new HostQuiet(deps.lastHostRequest, () => {
    for (const step of waiting.splice(0)) work.add(step);
    work.resume();
  });
  // Each step first asks whether the host is quiet, so a call that arrives while the work runs
  // waits at most for the step in progress, never for what is queued behind it; and the work
  // then waits QUIET_MS again, long enough for most calls' answers to pass too. A call that
  // runs for minutes does not hold it that long.
  const work = new IdleWork({
    sliceMs: SLICE_MS,
    maxQueued: MAX_QUEUED,
    mayRun: () => host.quiet(),
    held: () => schedule(),
  });

  /**
   * Loading ajv, loading its dialect's meta-schema check and making an instance are most of a
   * first compile, each several milliseconds in one piece: each is a step of its own, before the
   * compile.
   */
  const compileAhead = (job: SchemaJob): void => {
    if (compiledAhead >= MAX_COMPILED_AHEAD) return;
    const before = ajvLoaded ? [job.readyStep()].filter((step) => step !== undefined) : ajvLoadSteps();
    ajvLoaded = true;
    if (before.length > 0) {
      for (const step of before) work.add(step);
      work.add(() => compileAhead(job));
      return;
    }
    job.compile();
    compiledAhead++;
  };

  const schedule = (): void => {
    if (waiting.length > 0 || work.pending > 0) host.wait();
  };

  return {
    beforeHostWrite: () => {
      if (host.wrote()) schedule();
    },
    // A connection that is not a byte stream (HTTP) has no write hook: its quiet starts here.
    started: () => {
      host.started();
      schedule();
    },
    onListsChanged: (upstream, kinds) => {
      // A sleeping server's tools are listed from its last listing; their first call starts it,
      // and its schemas are made ready once it is running and lists them.
      if (!kinds.includes('tools') || upstream.state === 'asleep') return;
      const validated =
        deps.servers.get(upstream.name)?.validateArguments ?? config.gateway.validateArguments;
      const tools = upstream.tools;
      if (tools.length === 0 || waiting.length >= MAX_QUEUED) return;
      // The checks that need no ajv are built now, the first ones before the host's tools/list
      // is answered and the others in short slices after it: a host usually calls the moment it
      // has the list, with no quiet before, and a check left for that call is built on its path.
      // At start-up the first ones make the answer to tools/list a little later instead, which
      // no call waits on. Compiling the schemas that need ajv still waits for quiet.
      const jobs = tools.slice(0, MAX_TOOLS_AHEAD).map((tool) => schemaJobs(tool, validated, deps));
      jobs.forEach((toolJobs, i) => {
        for (const job of toolJobs)
          if (i < BUILT_AT_ONCE) job.withoutAjv();
          else soon.add(() => void job.withoutAjv());
      });
      waiting.push(() => {
        for (const job of jobs.flat())
          work.add(() => {
            if (!job.withoutAjv()) compileAhead(job);
          });
        work.add(() =>
          deps.logger.debug(
            `the schemas of server "${upstream.name}"'s ${plural(tools.length, 'tool')} are ready, ahead of their first call`,
          ),
        );
      });
      schedule();
    },
  };
}

interface SchemaWarmupDeps {
  readonly input: InputValidator;
  readonly output: PreparedOutputValidator;
  /** The servers in force by name, kept current across edits of the config. */
  readonly servers: ReadonlyMap<string, ServerConfig>;
  readonly logger: Logger;
  /** When the host's latest request arrived (`performance.now()`, 0 before any). */
  readonly lastHostRequest: () => number;
}

/** Getting one of a tool's schemas ready, for the validator that checks it. */
interface SchemaJob {
  /** Builds its check without ajv if it can (cached); false when it needs ajv. */
  readonly withoutAjv: () => boolean;
  /** The next piece of readying ajv for it, if any. */
  readonly readyStep: () => (() => void) | undefined;
  readonly compile: () => void;
}

/** The jobs of one listed tool: its arguments (when they are validated) and its output schema. */
function schemaJobs(
  tool: { readonly inputSchema?: unknown; readonly outputSchema?: unknown },
  validated: boolean,
  { input, output }: SchemaWarmupDeps,
): SchemaJob[] {
  const schema = tool.inputSchema;
  return [
    ...(validated
      ? [
          {
            withoutAjv: () => input.checkedWithoutAjv(schema),
            readyStep: () => input.readyStep(schema),
            compile: () => input.prepare(schema),
          },
        ]
      : []),
    ...(tool.outputSchema !== undefined
      ? [
          {
            withoutAjv: () => output.checkedWithoutAjv(tool),
            readyStep: () => output.readyStep(tool),
            compile: () => output.prepare(tool),
          },
        ]
      : []),
  ];
}

/**
 * Whether the host is quiet: it has been sent nothing, and has sent no request, for QUIET_MS.
 * `wait` calls `whenQuiet` once it is, checking again as long as it is not.
 */
class HostQuiet {
  /** When the host was last written to; 0: never yet (nothing is waited for before that). */
  private lastWrite = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly lastRequest: () => number,
    private readonly whenQuiet: () => void,
  ) {}

  /** The host was written to; true the first time. */
  wrote(): boolean {
    const first = this.lastWrite === 0;
    this.lastWrite = performance.now();
    return first;
  }

  /** Serving started without a write (HTTP): the quiet counts from now. */
  started(): void {
    if (this.lastWrite === 0) this.lastWrite = performance.now();
  }

  quiet(): boolean {
    return this.quietFor() >= QUIET_MS;
  }

  wait(): void {
    if (this.timer === undefined && this.lastWrite !== 0) this.arm(QUIET_MS);
  }

  private quietFor(): number {
    return performance.now() - Math.max(this.lastWrite, this.lastRequest());
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => this.check(), Math.max(1, ms)).unref();
  }

  private check(): void {
    this.timer = undefined;
    const quietFor = this.quietFor();
    if (quietFor >= QUIET_MS) return this.whenQuiet();
    this.arm(QUIET_MS - quietFor);
  }
}
