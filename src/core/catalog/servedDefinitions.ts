import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolRepairedEvent } from '../events.js';
import type { Logger } from '../logger.js';
import { withExposedUi } from './appUi.js';
import { checkDefinitions, type LeftOutTool, type RepairedTool } from './definitionCheck.js';

/** Where the outcome of a definition check is told (each distinct one once per run). */
export interface DefinitionReports {
  readonly repaired?: (server: string, repaired: RepairedTool) => void;
  readonly leftOut?: (server: string, leftOut: LeftOutTool) => void;
}

/**
 * The tool definitions the host is served for each upstream: checked one by one as a strict
 * host would (see definitionCheck.ts), repaired or left out, and with their MCP Apps resource
 * URIs in the gateway's namespaced form (see appUi.ts). Worked out once per list an upstream
 * sends (lists are rebuilt far more often than they change), and each repair or omission is
 * reported once per run, not at every re-listing.
 */
export class ServedDefinitions {
  private readonly cache = new WeakMap<readonly Tool[], readonly Tool[]>();
  private readonly reported = new Set<string>();

  constructor(private readonly reports: DefinitionReports = {}) {}

  tools(server: string, tools: readonly Tool[]): readonly Tool[] {
    const cached = this.cache.get(tools);
    if (cached !== undefined) return cached;
    const checked = checkDefinitions(tools);
    for (const repaired of checked.repaired)
      if (this.first(['repaired', server, repaired.tool, ...repaired.repairs]))
        this.reports.repaired?.(server, repaired);
    for (const left of checked.leftOut)
      if (this.first(['leftOut', server, left.tool, left.reason])) this.reports.leftOut?.(server, left);
    const served = checked.tools.map((tool) => withExposedUi(server, tool));
    this.cache.set(tools, served);
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
