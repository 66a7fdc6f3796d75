/**
 * The V8 flags a serving gateway changes as it runs (serve.ts says when), and what depends on
 * them. V8's flags belong to the whole process, so their state here is the process's, kept in
 * one place: V8 refuses a code cache made under other flags than the ones in force when the
 * cached script is compiled, so whatever compiles from a cache must know what is set.
 */
import { setFlagsFromString } from 'node:v8';

/** The flags set now: V8's own until serving sets others. */
export function currentServingFlags(): ServingFlags {
  return servingFlags;
}

/** Each set of flags this process has run under: its code was compiled under these. */
export function flagSetsUsed(): readonly ServingFlags[] {
  return [...flagsUsed.values()];
}

/**
 * Runs `compile` under V8's own flags, those the build made its code caches under (the
 * generated validators and meta-schemas, the bundled ajv), and sets the flags in force back
 * after it; a cache would otherwise be refused once serving has set its flags, and the code
 * compiled afresh. Only a compile belongs in it: the flags change how V8 grows its heap and
 * keeps bytecode, not what the code does.
 */
export function underV8Defaults<T>(compile: () => T): T {
  const now = servingFlags;
  if (now.youngGeneration === V8_DEFAULTS.youngGeneration && now.keepBytecode === V8_DEFAULTS.keepBytecode)
    return compile();
  setServingFlags(V8_DEFAULTS);
  try {
    return compile();
  } finally {
    setServingFlags(now);
  }
}

/**
 * Stops V8 from throwing away the bytecode of functions it has not run for a while. A gateway
 * idles between a host's calls, and while it idles V8's memory reducer runs full collections to
 * shrink the heap; V8 drops a function's bytecode once enough full collections have passed
 * without it running, so a long pause could age out the whole call path, which the next call
 * would then compile again, on the main thread and V8's compiler threads. (The extra CPU per call
 * seen in the bench's blocks after a few seconds' pause is another thing, the same in every build:
 * see bench/README.md, "After a pause".) The bytecode kept is the gateway's own code that has run
 * once, a few MB at most. Set once serving (after the code caches of start-up were read: V8
 * refuses a cache made under other flags).
 */
function keepBytecode(keep: boolean): void {
  setFlagsFromString(keep ? '--no-flush-bytecode' : '--flush-bytecode');
}

/** How V8's young generation grows: as V8 has it, held at its size, or as a serving gateway's. */
export type YoungGeneration = keyof typeof SEMI_SPACE_GROWTH;

export interface ServingFlags {
  readonly youngGeneration: YoungGeneration;
  readonly keepBytecode: boolean;
}

/** V8's own flags, as a process starts with them. */
const V8_DEFAULTS: ServingFlags = Object.freeze({ youngGeneration: 'v8', keepBytecode: false });

/** The flags below as this process set them last: V8's own until serving sets them. */
let servingFlags: ServingFlags = V8_DEFAULTS;

/** Each set of them this process has run under, by name: our code was compiled under these. */
const flagsUsed = new Map<string, ServingFlags>([['v8/false', servingFlags]]);

/** Sets V8's flags to `flags` (each only when it differs from what is set). */
export function setServingFlags(flags: ServingFlags): void {
  if (flags.youngGeneration !== servingFlags.youngGeneration) youngGenerationGrowth(flags.youngGeneration);
  if (flags.keepBytecode !== servingFlags.keepBytecode) keepBytecode(flags.keepBytecode);
  servingFlags = { ...flags };
  flagsUsed.set(`${flags.youngGeneration}/${flags.keepBytecode}`, servingFlags);
}

/**
 * Keeps V8's young generation at the size it starts with (a few MB) while the gateway starts,
 * where V8 would grow it (to 16 MB, then 32 MB) after collections in which much survived. That
 * is what start-up is: the modules, and with a long tool list its parsed definitions, its served
 * text and bytes, all long-lived, so growing the young generation for them buys nothing, and the
 * pages grown into stay resident for the rest of the run (set once the config and policies are
 * read: see `startServing`). Measured with 10,000 tools
 * (bench/listRss.mjs): the peak resident size fell by about 7 MB. Once the upstreams' first
 * lists are in (see `serve`), it grows again, by V8's rule (after collections in which more
 * than its size survived) but four times over at each step rather than twice: kept small under
 * call traffic, the young generation cost about 3.5% more instructions per call (more frequent
 * collections, measured under callgrind), and doubling it took two growths to reach the 32 MB
 * a busy gateway settles at, the second often thousands of calls into a burst of concurrent
 * calls, each collection until then over half the space, and the pages grown into faulted in
 * during the burst (bench/window.mjs --gc --only new: 25 young collections and 0.2 page faults
 * per call in its window, against 19 and 0.08 growing fourfold). V8 reads this flag at each
 * growth it considers (on the command line it would not take a value below 2); a Node without
 * it says so on stderr and grows as before.
 */
function youngGenerationGrowth(growth: YoungGeneration): void {
  setFlagsFromString(`--semi-space-growth-factor=${SEMI_SPACE_GROWTH[growth]}`);
}

/**
 * V8's semi-space growth factor for each way of growing. 'v8' is V8's default, set back
 * exactly: V8 refuses a code cache made under other flags, and the code compiled before serving
 * began was compiled under V8's own.
 */
const SEMI_SPACE_GROWTH = { v8: 2, held: 1, serving: 4 } as const;
