import type { ServerConfig } from '../../config/types.js';
import type { Params } from '../protocol/jsonRpc.js';
import { declaresTasks } from '../protocol/taskMessages.js';

/** What the initialize answer needs to know of one upstream. */
export interface UpstreamFacts {
  readonly name: string;
  readonly config: Pick<ServerConfig, 'namespace' | 'instructions' | 'disabled'>;
  readonly state: string;
  readonly capabilities: Params;
  readonly instructions: string | undefined;
}

const SERVING: ReadonlySet<string> = new Set(['ready', 'asleep', 'connecting']);

/** One server's section may hold this many characters; longer text is cut, and the cut logged. */
export const MAX_SERVER_INSTRUCTIONS = 8 * 1024;
/** The whole merged text may hold this many; sections past it are left out, and logged. */
export const MAX_INSTRUCTIONS = 32 * 1024;

/**
 * The gateway's capabilities, derived from what its upstreams declared when the host
 * initialized (or, for a server asleep or still starting, declared in its last listing): `resources.subscribe` only when some upstream supports subscriptions,
 * `completions` only when some upstream completes. Tools, prompts and resources are always
 * declared, with `listChanged`, because upstreams come and go while the gateway serves; so is
 * `logging`, which the gateway answers itself.
 */
export function gatewayCapabilities(upstreams: readonly UpstreamFacts[]): Params {
  // A server asleep, or still starting, offers what its last listing says (nothing without one).
  const serving = upstreams.filter((u) => SERVING.has(u.state));
  const subscribe = serving.some((u) => (u.capabilities.resources as Params | undefined)?.subscribe === true);
  const completions = serving.some((u) => u.capabilities.completions !== undefined);
  const tasks = mergedTasks(serving);
  return {
    tools: { listChanged: true },
    prompts: { listChanged: true },
    resources: subscribe ? { subscribe: true, listChanged: true } : { listChanged: true },
    logging: {},
    ...(completions && { completions: {} }),
    ...(tasks !== undefined && { tasks }),
  };
}

/**
 * The `tasks` capability when some upstream declares one: `list` and `cancel` when some upstream
 * offers them (the gateway merges lists and routes cancels by handle), and each kind of request
 * some upstream runs as a task. Undefined when none declares tasks.
 */
function mergedTasks(serving: readonly UpstreamFacts[]): Params | undefined {
  const declared = serving.flatMap((u) => {
    const tasks = u.capabilities.tasks;
    // A 2026-07-28 server with the tasks extension runs tool calls as tasks and cancels them.
    if (declaresTasks(u.capabilities)) return [{ cancel: {}, requests: { tools: { call: {} } } }];
    return typeof tasks === 'object' && tasks !== null ? [tasks as Params] : [];
  });
  if (declared.length === 0) return undefined;
  const merged: Params = {};
  if (declared.some((t) => t.list !== undefined)) merged.list = {};
  if (declared.some((t) => t.cancel !== undefined)) merged.cancel = {};
  const requests: Record<string, Params> = {};
  for (const task of declared) {
    const byKind = task.requests;
    if (typeof byKind !== 'object' || byKind === null) continue;
    for (const [kind, methods] of Object.entries(byKind as Params)) {
      // Own, ordinary names only: a server's "__proto__" must not reach Object's.
      if (typeof methods !== 'object' || methods === null || kind === '__proto__') continue;
      const into = (requests[kind] ??= {});
      for (const method of Object.keys(methods as Params)) if (method !== '__proto__') into[method] = {};
    }
  }
  if (Object.keys(requests).length > 0) merged.requests = requests;
  return merged;
}

/**
 * The upstreams' instructions as one text for the host: a section per server, in config order,
 * headed with its namespace (or its name, without one), as each server's `instructions:` setting
 * says (pass on, leave out, replace). Bounded per server and in all; `onCut` hears what was cut.
 * `notes` (servers that could not start, and why) come last.
 */
export function mergedInstructions(
  upstreams: readonly UpstreamFacts[],
  notes: readonly string[],
  onCut: (message: string) => void,
): string | undefined {
  const sections: string[] = [];
  let total = 0;
  for (const upstream of upstreams) {
    if (upstream.config.disabled) continue;
    const setting = upstream.config.instructions;
    const text = typeof setting === 'string' ? setting : setting ? upstream.instructions : undefined;
    if (text === undefined || text.trim() === '') continue;
    let body = text.trim();
    if (body.length > MAX_SERVER_INSTRUCTIONS) {
      onCut(
        `the instructions of server "${upstream.name}" are ${body.length} characters; the host gets the first ${MAX_SERVER_INSTRUCTIONS}`,
      );
      body = `${body.slice(0, MAX_SERVER_INSTRUCTIONS)}…`;
    }
    const section = `## ${upstream.config.namespace ?? upstream.name}\n${body}`;
    if (total + section.length > MAX_INSTRUCTIONS) {
      onCut(
        `the instructions of server "${upstream.name}" are left out: the merged instructions would pass ${MAX_INSTRUCTIONS} characters`,
      );
      continue;
    }
    total += section.length;
    sections.push(section);
  }
  const all = [...sections, ...notes];
  return all.length === 0 ? undefined : all.join('\n\n');
}
