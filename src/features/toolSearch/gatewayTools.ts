import type { Tool } from '@modelcontextprotocol/sdk/types.js';

/** The search tool's name in a search-mode listing. */
export const SEARCH_TOOL = 'search_tools';
/** The call tool's name in a search-mode listing. */
export const CALL_TOOL = 'call_tool';

/** Matches a search returns when the host does not say how many. */
export const DEFAULT_LIMIT = 8;
/** Matches a search returns at most, whatever the host asks: each is a full definition. */
export const MAX_LIMIT = 50;

/** The search tool's definition; its description names the servers it searches. */
export function searchToolDefinition(count: number, servers: readonly string[]): Tool {
  return {
    name: SEARCH_TOOL,
    title: 'Search tools',
    description:
      `Finds tools by what they do among the ${count} tools of ${servers.length === 1 ? 'server' : 'servers'} ` +
      `${servers.join(', ')}. Describe the task in plain words; the best matches come back with their ` +
      `full definitions (name, description, inputSchema). Call one with ${CALL_TOOL}.`,
    inputSchema: {
      type: 'object',
      properties: {
        query: {
          type: 'string',
          description: 'What you want to do, in plain words (e.g. "open an issue on GitHub").',
        },
        servers: {
          type: 'array',
          items: { type: 'string' },
          description: 'Only tools of these servers.',
        },
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: MAX_LIMIT,
          description: `How many tools to return at most (default ${DEFAULT_LIMIT}).`,
        },
      },
      required: ['query'],
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
  };
}

/** The call tool's definition. */
export function callToolDefinition(): Tool {
  return {
    name: CALL_TOOL,
    title: 'Call a tool',
    description:
      `Calls a tool that ${SEARCH_TOOL} found, by its exact name, with the arguments its inputSchema asks for. ` +
      'The call is checked and recorded exactly as a direct call of that tool.',
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', description: `The tool's name as ${SEARCH_TOOL} returned it.` },
        arguments: { type: 'object', description: "The tool's arguments." },
      },
      required: ['name'],
    },
  };
}
