#!/usr/bin/env node
// Memory per idle principal on the HTTP listener: the built gateway with auth: (a real issuer,
// oauth2-mock-server) and one stdio server that runs per principal (the fixture). PRINCIPALS
// hosts, each with a token of its own subject, connect with the SDK's Streamable HTTP client and
// list tools once (which starts their own process of the server), then sit idle. It reports the
// gateway's resident memory before and after, and the resident memory of the principals' own
// server processes (their pids from the audit trail), each divided by the number of principals.
// Linux only (reads /proc). Needs a build (`npm run build`).
//
//   node bench/principalMemory.mjs [PRINCIPALS] [PATH/TO/cli.js]

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { OAuth2Server } from 'oauth2-mock-server';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PRINCIPALS = Number(process.argv[2] ?? 20);
const cli = process.argv[3] ?? path.join(ROOT, 'dist/cli.js');
const AUDIENCE = 'https://warden.bench/mcp';

/** Resident memory of a process now (VmRSS), in KiB; 0 when it is gone. */
function rssKib(pid) {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}
const settle = () => new Promise((resolve) => setTimeout(resolve, 1500));

const issuer = new OAuth2Server();
await issuer.issuer.keys.generate('RS256');
await issuer.start(0, '127.0.0.1');
const dir = mkdtempSync(path.join(tmpdir(), 'warden-bench-'));
const auditFile = path.join(dir, 'audit.jsonl');
const config = path.join(dir, 'proxy.config.json');
writeFileSync(
  config,
  JSON.stringify({
    audit: { file: auditFile },
    auth: { issuer: issuer.issuer.url, audience: AUDIENCE },
    servers: {
      files: { command: process.execPath, args: [path.join(ROOT, 'test/fixtures/fixture-server.mjs')] },
    },
  }),
);
const gateway = spawn(process.execPath, [cli, '--config', config, '--http', '127.0.0.1:0'], {
  env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
  stdio: ['ignore', 'ignore', 'pipe'],
});
let stderr = '';
const url = await new Promise((resolve, reject) => {
  gateway.stderr.on('data', (chunk) => {
    stderr += chunk;
    const found = /listening on (http:\/\/\S+\/mcp)/.exec(stderr);
    if (found) resolve(found[1]);
  });
  gateway.once('exit', () => reject(new Error(`the gateway exited:\n${stderr}`)));
});

async function connectAs(subject) {
  const token = await issuer.issuer.buildToken({
    scopesOrTransform: (_header, payload) => {
      payload.sub = subject;
      payload.aud = AUDIENCE;
    },
  });
  const client = new Client({ name: `${subject}-host`, version: '1.0.0' }, { capabilities: {} });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
    }),
  );
  await client.listTools();
  return client;
}

// One principal first, so the baseline includes what any first session loads.
const clients = [await connectAs('warmup')];
await settle();
const before = rssKib(gateway.pid);
for (let i = 0; i < PRINCIPALS; i++) clients.push(await connectAs(`user-${i}`));
await settle();
const after = rssKib(gateway.pid);
const pids = readFileSync(auditFile, 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line))
  .filter((r) => r.type === 'upstream_start' && r.principal?.subject?.startsWith('user-'))
  .map((r) => r.pid);
const processesKib = pids.reduce((sum, pid) => sum + rssKib(pid), 0);

const mib = (kib) => (kib / 1024).toFixed(1);
console.log(`${PRINCIPALS} idle principals, each with one session and its own process of one stdio server`);
console.log(`gateway RSS: ${mib(before)} MiB with one principal, ${mib(after)} MiB with ${PRINCIPALS + 1}`);
console.log(`gateway memory per idle principal: ${mib((after - before) / PRINCIPALS)} MiB`);
console.log(`own server processes: ${pids.length}, ${mib(processesKib / Math.max(pids.length, 1))} MiB each`);
console.log(
  `memory per idle principal, gateway and process together: ${mib((after - before + processesKib) / PRINCIPALS)} MiB`,
);

await Promise.all(clients.map((c) => c.close().catch(() => {})));
gateway.kill('SIGTERM');
await new Promise((resolve) => gateway.once('exit', resolve));
await issuer.stop();
