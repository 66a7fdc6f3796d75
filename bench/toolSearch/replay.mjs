// A stand-in MCP server that lists one server's real tool definitions from catalogue.json, as
// that server listed them when they were collected: the gateway in front of it then lists what
// it would list in front of the real one. Calls are not served; listing is all the bench asks.
//
//   node bench/toolSearch/replay.mjs <server>

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const here = dirname(fileURLToPath(import.meta.url));
const name = process.argv[2];
const { tools: all } = JSON.parse(readFileSync(join(here, 'catalogue.json'), 'utf8'));
const tools = all.filter((tool) => tool.server === name).map(({ server: _server, ...tool }) => tool);
if (tools.length === 0) {
  process.stderr.write(`replay.mjs: no server "${name}" in catalogue.json\n`);
  process.exit(2);
}

const server = new Server({ name, version: '0.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
await server.connect(new StdioServerTransport());
