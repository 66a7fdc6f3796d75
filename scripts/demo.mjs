#!/usr/bin/env node
/**
 * `npm run demo`: acts as a desktop host would. Launches `mcp-warden --config proxy.config.yaml`
 * over stdio with the official SDK Client, lists the merged tools, and calls one tool on each
 * upstream, printing what the host sees. The gateway's own log (stderr) is shown dimmed.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const config = process.argv[2] ?? path.join(root, 'proxy.config.yaml');
const dim = (s) => (process.stdout.isTTY ? `\x1b[2m${s}\x1b[0m` : s);
const bold = (s) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);

const transport = new StdioClientTransport({
  command: process.execPath,
  args: [path.join(root, 'dist/cli.js'), '--config', config],
  stderr: 'pipe',
  cwd: root,
});
transport.stderr?.on('data', (chunk) => {
  for (const line of chunk.toString().split('\n').filter(Boolean))
    process.stdout.write(dim(`  gateway log | ${line}\n`));
});

const client = new Client({ name: 'mcp-warden-demo-host', version: '1.0.0' });
await client.connect(transport);
const info = client.getServerVersion();
console.log(bold(`\nConnected to ${info?.name} ${info?.version} as the host's one MCP server.\n`));

const { tools } = await client.listTools();
const byServer = new Map();
for (const t of tools) {
  const server = t.name.split('__')[0];
  byServer.set(server, [...(byServer.get(server) ?? []), t.name]);
}
console.log(bold(`tools/list: ${tools.length} tools from ${byServer.size} upstream servers`));
for (const [server, names] of byServer) {
  console.log(
    `  ${server}: ${names.slice(0, 6).join(', ')}${names.length > 6 ? `, … (${names.length})` : ''}`,
  );
}

async function show(name, args) {
  console.log(bold(`\ntools/call ${name} ${JSON.stringify(args)}`));
  const result = await client.callTool({ name, arguments: args });
  for (const c of result.content ?? []) {
    const text = c.type === 'text' ? c.text : `<${c.type}>`;
    console.log(`  ${text.split('\n').slice(0, 8).join('\n  ')}`);
  }
  if (result.isError) console.log('  (isError: true)');
}

await show('everything__echo', { message: 'hello through mcp-warden' });
await show('fs__list_directory', { path: root });
await show('memory__create_entities', {
  entities: [
    { name: 'mcp-warden', entityType: 'gateway', observations: ['fronts three servers in this demo'] },
  ],
});
await show('memory__search_nodes', { query: 'mcp-warden' });

try {
  await client.callTool({ name: 'fs__write_file', arguments: { path: 'x', content: 'y' } });
} catch (error) {
  console.log(bold('\ntools/call fs__write_file (excluded in proxy.config.yaml)'));
  console.log(`  refused: ${error.message}`);
}

await client.close();
console.log(bold('\nDone: the host closed the connection and mcp-warden stopped every upstream.'));
