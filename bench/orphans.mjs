#!/usr/bin/env node
// How many processes a gateway killed with SIGKILL leaves behind. Upstreams: `sh -c` in front of
// a server that ignores SIGTERM and stdin EOF, with a grandchild in its group and one that called
// setsid; and a plain server with a grandchild. Every descendant of the gateway is listed from
// /proc once the tools are listed; the gateway is SIGKILLed; survivors are counted after 3 s
// (and then killed). Linux only. Needs a build (`npm run build`).
//
//   node bench/orphans.mjs [PATH/TO/cli.js]

import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const cli = process.argv[2] ?? path.join(ROOT, 'dist/cli.js');
const FIXTURE = path.join(ROOT, 'test/fixtures/fixture-server.mjs');
const node = process.execPath;

function parentOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? undefined : Number(fields[1]);
  } catch {
    return undefined;
  }
}

function descendants(root) {
  const children = new Map();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const ppid = parentOf(pid);
    if (ppid === undefined) continue;
    children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  const found = [];
  const queue = [root];
  while (queue.length > 0) {
    for (const pid of children.get(queue.pop()) ?? []) {
      found.push(pid);
      queue.push(pid);
    }
  }
  return found;
}

const alive = (pid) => parentOf(pid) !== undefined;

const dir = mkdtempSync(path.join(tmpdir(), 'warden-orphans-'));
const config = path.join(dir, 'proxy.config.json');
const f = (name) => path.join(dir, name);
writeFileSync(
  config,
  JSON.stringify({
    servers: {
      stubborn: {
        command: 'sh',
        args: [
          '-c',
          `"${node}" "${FIXTURE}" --ignore-sigterm --spawn-grandchild "${f('g1')}" --spawn-setsid-grandchild "${f('g2')}"`,
        ],
      },
      plain: { command: node, args: [FIXTURE, '--spawn-grandchild', f('g3')] },
    },
  }),
);
const gateway = spawn(node, [cli, '--config', config], { stdio: ['pipe', 'pipe', 'ignore'] });
const listed = new Promise((resolve) => {
  let text = '';
  gateway.stdout.on('data', (chunk) => {
    text += chunk;
    if (text.includes('"id":2')) resolve();
  });
});
gateway.stdin.write(
  '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n' +
    '{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n',
);
await listed;
await new Promise((r) => setTimeout(r, 300));
const tree = descendants(gateway.pid);
gateway.kill('SIGKILL');
await new Promise((r) => setTimeout(r, 3000));
const survivors = tree.filter(alive);
process.stdout.write(
  `gateway ${cli}\n${tree.length} processes under the gateway; ${survivors.length} alive 3 s after SIGKILL\n`,
);
for (const pid of survivors) process.kill(pid, 'SIGKILL');
