#!/usr/bin/env node
// OAuth refresh off the call path: what renewing an upstream's access token costs the calls made
// while it happens. The built gateway fronts `oidc-provider` and its protected MCP server
// (test/fixtures/oidc-fixture.mjs) with short-lived access tokens, and the token endpoint answers
// each request TOKEN_DELAY ms late, as a distant identity provider would. A host calls the
// server's `whoami` tool one call after another for SECONDS, long enough for several renewals;
// the fixture says when each token request was taken and answered. Calls whose span overlaps a
// token request are set against the calls that do not: had a call waited for a renewal, it
// would have taken at least TOKEN_DELAY ms.
//
//   npm run build && node bench/oauthRefresh.mjs [--seconds S] [--ttl S] [--delay MS] [--cli FILE]
//
// Goal: calls during a renewal p50 ≤ 1.5× the other calls' p50, and no call waits for a renewal
// (the slowest call during one is shorter than the token endpoint's delay).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { recordPrices } from './lib/prices.mjs';
import { median } from './lib/stats.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const NODE = process.execPath;
const { values: flags } = parseArgs({
  options: {
    seconds: { type: 'string', default: '20' },
    ttl: { type: 'string', default: '6' },
    delay: { type: 'string', default: '500' },
    cli: { type: 'string', default: path.join(ROOT, 'dist/cli.js') },
  },
});
const SECONDS = Number(flags.seconds);
const DELAY_MS = Number(flags.delay);
const P50_GOAL = 1.5;

const work = mkdtempSync(path.join(tmpdir(), 'warden-oauth-refresh-'));
const fixture = spawn(NODE, [path.join(ROOT, 'test/fixtures/oidc-fixture.mjs')], {
  env: { PATH: process.env.PATH ?? '', ACCESS_TTL: flags.ttl, TOKEN_DELAY_MS: String(DELAY_MS) },
  stdio: ['ignore', 'pipe', 'ignore'],
});
let client;
try {
  const { issuer, resource } = JSON.parse(
    await new Promise((resolve) => createInterface({ input: fixture.stdout }).once('line', resolve)),
  );
  const config = path.join(work, 'proxy.config.yaml');
  writeFileSync(
    config,
    JSON.stringify({
      servers: { oidc: { url: resource, oauth: { clientId: 'warden', scopes: ['openid', 'mcp'] } } },
    }),
  );
  const env = {
    ...process.env,
    MCP_WARDEN_CREDENTIALS: 'file',
    MCP_WARDEN_CREDENTIALS_FILE: path.join(work, 'credentials.json'),
    XDG_STATE_HOME: path.join(work, 'state'),
    BROWSER: `${NODE} ${path.join(ROOT, 'test/fixtures/oauth-browser.mjs')}`,
  };
  const login = spawnSync(NODE, [flags.cli, 'auth', 'login', 'oidc', '--config', config], {
    env,
    encoding: 'utf8',
  });
  if (login.status !== 0) throw new Error(`auth login failed: ${login.stderr}`);

  client = new Client({ name: 'oauth-refresh-bench', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({ command: NODE, args: [flags.cli, '--config', config], env, stderr: 'ignore' }),
  );
  // The server joins once its connection is up; then a warm-up.
  for (let i = 0; ; i++) {
    const { tools } = await client.listTools();
    if (tools.some((t) => t.name === 'oidc__whoami')) break;
    if (i > 200) throw new Error('the oidc server never joined');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const call = () => client.callTool({ name: 'oidc__whoami', arguments: {} });
  for (let i = 0; i < 50; i++) await call();
  const before = JSON.parse(await (await fetch(`${issuer}/_test/token-times`)).text()).length;

  const spans = [];
  const origin = Date.now() - performance.now();
  const end = performance.now() + SECONDS * 1000;
  while (performance.now() < end) {
    const start = performance.now();
    const result = await call();
    if (result.isError) throw new Error(`call failed: ${JSON.stringify(result.content)}`);
    spans.push([origin + start, origin + performance.now()]);
  }
  const renewals = JSON.parse(await (await fetch(`${issuer}/_test/token-times`)).text()).slice(before);
  const overlaps = ([a, b]) => renewals.some(([s, e]) => a < e && s < b);
  const during = spans.filter(overlaps).map(([a, b]) => b - a);
  const others = spans.filter((s) => !overlaps(s)).map(([a, b]) => b - a);
  if (renewals.length === 0 || during.length === 0)
    throw new Error(`no renewal happened in ${SECONDS} s: lengthen --seconds or shorten --ttl`);
  const ratio = median(during) / median(others);
  const slowest = Math.max(...during);
  const out = (line) => process.stdout.write(`${line}\n`);
  out(
    `${spans.length} calls in ${SECONDS} s, ${renewals.length} renewals (token endpoint ${DELAY_MS} ms late)`,
  );
  out(
    `calls during a renewal: ${during.length}, p50 ${median(during).toFixed(2)} ms, slowest ${slowest.toFixed(2)} ms`,
  );
  out(
    `other calls:            ${others.length}, p50 ${median(others).toFixed(2)} ms, slowest ${Math.max(...others).toFixed(2)} ms`,
  );
  out(
    `p50 during ÷ other: ${ratio.toFixed(2)}× (goal ≤ ${P50_GOAL}×); slowest during ÷ endpoint delay: ${(slowest / DELAY_MS).toFixed(2)} (< 1: no call waited)`,
  );
  recordPrices('oauthRefresh', [
    {
      what: 'OAuth refresh: calls during a renewal, p50 ÷ other calls',
      value: ratio,
      unit: '×',
      atMost: P50_GOAL,
    },
    {
      what: 'OAuth refresh: slowest call during a renewal ÷ the token endpoint delay',
      value: slowest / DELAY_MS,
      unit: '×',
      atMost: 1,
      note: `${renewals.length} renewals, ${during.length} calls during them`,
    },
  ]);
  process.exitCode = ratio <= P50_GOAL && slowest < DELAY_MS ? 0 : 3;
} finally {
  await client?.close().catch(() => {});
  fixture.kill();
  rmSync(work, { recursive: true, force: true });
}
