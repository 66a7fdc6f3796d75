// What the built gateway lists in front of the benchmark's catalogue: each of its servers is
// replayed from catalogue.json (replay.mjs), and the gateway (dist/cli.js) is started once with
// `catalog.mode: all` and once with `catalog.mode: search`, and asked for `tools/list` over stdio. The answers are the gateway's own, not a model of them.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const CLI = join(here, '..', '..', 'dist', 'cli.js');

/** Whether there is a built gateway to ask. */
export const built = () => existsSync(CLI);

/**
 * The gateway's `tools/list` result (as JSON text) and its initialize instructions, in `mode`,
 * in front of `servers` (the catalogue's server names).
 */
export async function gatewayListing(servers, mode) {
  const dir = mkdtempSync(join(tmpdir(), 'warden-bench-listing-'));
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      catalog: { mode },
      servers: Object.fromEntries(
        servers.map((server) => [
          server,
          { command: process.execPath, args: [join(here, 'replay.mjs'), server] },
        ]),
      ),
    }),
  );
  // Spoken to line by line rather than through the SDK's Client, whose schemas would parse (and
  // could reshape) the answer: the figure is of the text the gateway sends.
  const child = spawn(process.execPath, [CLI, '--config', config], {
    // An empty folder for managed settings and state: the machine's own must not change the list.
    env: { PATH: process.env.PATH ?? '', HOME: dir, MCP_WARDEN_MANAGED_DIR: dir, XDG_STATE_HOME: dir },
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const answers = new Map();
  const waiting = new Map();
  createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line);
    if (message.id === undefined) return;
    answers.set(message.id, message);
    waiting.get(message.id)?.();
  });
  const ask = (id, method, params) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no answer to ${method} in 60 s`)), 60_000);
      waiting.set(id, () => {
        clearTimeout(timer);
        const answer = answers.get(id);
        if (answer.error !== undefined) reject(new Error(`${method}: ${answer.error.message}`));
        else resolve(answer.result);
      });
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  try {
    const init = await ask(1, 'initialize', {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'tool-search-bench', version: '0.0.0' },
    });
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
    // The list waits for every server to be up, so it is complete.
    const listing = await ask(2, 'tools/list', {});
    return { json: JSON.stringify(listing), count: listing.tools.length, instructions: init.instructions };
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}
