import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolRepairedEvent } from '../events.js';
import type { Logger } from '../logger.js';
import { withExposedUi } from './appUi.js';
import {
  checkDefinitions,
  type DefinitionRevision,
  type LeftOutTool,
  type RepairedTool,
} from './definitionCheck.js';

/** Where the outcome of a definition check is told (each distinct one once per run). */
export interface DefinitionReports {
  readonly repaired?: (server: string, repaired: RepairedTool) => void;
  readonly leftOut?: (server: string, leftOut: LeftOutTool) => void;
}

/**
 * The tool definitions the host is served for each upstream: checked one by one as a strict
 * host of the negotiated revision would (see definitionCheck.ts), repaired or left out, and with their MCP Apps resource
 * URIs in the gateway's namespaced form (see appUi.ts). Worked out once per list an upstream
 * sends (lists are rebuilt far more often than they change), and each repair or omission is
 * reported once per run, not at every re-listing.
 */
export class ServedDefinitions {
  private readonly cache = new WeakMap<readonly Tool[], Map<string, readonly Tool[]>>();
  private readonly reported = new Set<string>();

  constructor(private readonly reports: DefinitionReports = {}) {}

  /**
   * `server`'s tools as served to a host of `revision`. `runsTasks`: the server is a 2026-07-28
   * one that declares the tasks extension (see `withTaskSupport`).
   */
  tools(
    server: string,
    tools: readonly Tool[],
    revision: DefinitionRevision = '2025-11-25',
    runsTasks = false,
  ): readonly Tool[] {
    const marked = runsTasks && revision === '2025-11-25';
    const key = marked ? `${revision}+tasks` : revision;
    let byRevision = this.cache.get(tools);
    const cached = byRevision?.get(key);
    if (cached !== undefined) return cached;
    const checked = checkDefinitions(tools, revision);
    for (const repaired of checked.repaired)
      if (this.first(['repaired', server, repaired.tool, ...repaired.repairs]))
        this.reports.repaired?.(server, repaired);
    for (const left of checked.leftOut)
      if (this.first(['leftOut', server, left.tool, left.reason])) this.reports.leftOut?.(server, left);
    const served = checked.tools.map((tool) => withExposedUi(server, marked ? withTaskSupport(tool) : tool));
    if (byRevision === undefined) this.cache.set(tools, (byRevision = new Map()));
    byRevision.set(key, served);
    return served;
  }

  private first(key: readonly string[]): boolean {
    const text = JSON.stringify(key);
    if (this.reported.has(text)) return false;
    this.reported.add(text);
    return true;
  }
}

/**
 * A tool of a 2026-07-28 server with the tasks extension, as a 2025-11-25 host reads it. That
 * extension has no per-tool flag: the server decides per call whether to answer with a task,
 * and only for a client that declared the extension. A 2025-11-25 host decides before the call,
 * from `execution.taskSupport`, so each such tool is marked "optional": a call with `task` is
 * sent declaring the extension (the server may answer with a task, or at once), a call without
 * it is sent without (the server answers at once). Never "required", which would promise what
 * the server did not say. A tool that carries its own `execution` keeps it.
 */
function withTaskSupport(tool: Tool): Tool {
  return tool.execution === undefined ? { ...tool, execution: { taskSupport: 'optional' } } : tool;
}

/**
 * The served definitions of a serving gateway: a repair is logged and recorded in the audit
 * trail (`tool_repaired`), a tool left out is a warning naming server, tool and reason.
 */
export function loggedDefinitions(
  logger: Logger,
  record: (event: Omit<ToolRepairedEvent, 'session'>) => void,
): ServedDefinitions {
  return new ServedDefinitions({
    repaired: (server, { tool, repairs }) => {
      logger.info(
        `server "${server}": tool ${JSON.stringify(tool)} would be rejected by a strict host; repaired (${repairs.join('; ')})`,
      );
      record({ type: 'tool_repaired', server, upstreamTool: tool, repairs: [...repairs] });
    },
    leftOut: (server, { tool, reason }) =>
      logger.warn(
        `server "${server}": tool ${JSON.stringify(tool)} is left out: a strict host would reject its definition and it cannot be repaired without changing its meaning (${reason})`,
      ),
  });
}
