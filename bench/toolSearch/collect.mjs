// Collects the tool search benchmark's fixed test set: the real tool definitions of public MCP
// servers from npm. Each package is installed into a temporary folder (never into our own
// dependencies), started over stdio with the SDK's Client, and asked for its tools. No server is
// given a real credential: the ones that need a token only read it when a tool is called, so a
// dummy value is enough to list. The result is committed as catalogue.json so that every run of
// run.mjs ranks the same tools; run this again only to refresh it on purpose.
//
//   node bench/toolSearch/collect.mjs [--keep]

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { format, resolveConfig } from 'prettier';

const here = dirname(fileURLToPath(import.meta.url));
const LIST_TIMEOUT_MS = 60_000;

/**
 * The servers, by the name the catalogue gives them. `args` and `env` are what the server needs
 * to start and list; every token is a dummy.
 */
const SERVERS = [
  { server: 'filesystem', pkg: '@modelcontextprotocol/server-filesystem', args: (dir) => [dir] },
  {
    server: 'memory',
    pkg: '@modelcontextprotocol/server-memory',
    env: (dir) => ({ MEMORY_FILE_PATH: join(dir, 'memory.jsonl') }),
  },
  { server: 'everything', pkg: '@modelcontextprotocol/server-everything', args: () => ['stdio'] },
  { server: 'thinking', pkg: '@modelcontextprotocol/server-sequential-thinking' },
  {
    server: 'github',
    pkg: '@modelcontextprotocol/server-github',
    env: () => ({ GITHUB_PERSONAL_ACCESS_TOKEN: 'dummy' }),
  },
  {
    server: 'gitlab',
    pkg: '@modelcontextprotocol/server-gitlab',
    env: () => ({ GITLAB_PERSONAL_ACCESS_TOKEN: 'dummy' }),
  },
  {
    server: 'slack',
    pkg: '@modelcontextprotocol/server-slack',
    env: () => ({ SLACK_BOT_TOKEN: 'xoxb-dummy', SLACK_TEAM_ID: 'T0DUMMY' }),
  },
  { server: 'puppeteer', pkg: '@modelcontextprotocol/server-puppeteer' },
  {
    server: 'brave',
    pkg: '@modelcontextprotocol/server-brave-search',
    env: () => ({ BRAVE_API_KEY: 'dummy' }),
  },
  {
    server: 'maps',
    pkg: '@modelcontextprotocol/server-google-maps',
    env: () => ({ GOOGLE_MAPS_API_KEY: 'dummy' }),
  },
  {
    server: 'postgres',
    pkg: '@modelcontextprotocol/server-postgres',
    args: () => ['postgresql://localhost:1/dummy'],
  },
  // Connects to Redis before it answers: without one it exits, and is reported as skipped.
  { server: 'redis', pkg: '@modelcontextprotocol/server-redis', args: () => ['redis://localhost:1'] },
  { server: 'playwright', pkg: '@playwright/mcp' },
  { server: 'notion', pkg: '@notionhq/notion-mcp-server', env: () => ({ NOTION_TOKEN: 'dummy' }) },
  { server: 'kubernetes', pkg: 'mcp-server-kubernetes' },
];

const keep = process.argv.includes('--keep');
const dir = mkdtempSync(join(tmpdir(), 'warden-toolsearch-'));
writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'toolsearch-collect', private: true }));
process.stderr.write(`installing ${SERVERS.length} packages into ${dir}\n`);
// Install scripts are skipped: none is needed to list tools, and some download browsers.
execFileSync(
  'npm',
  ['install', '--ignore-scripts', '--no-audit', '--no-fund', ...SERVERS.map((s) => s.pkg)],
  {
    cwd: dir,
    stdio: ['ignore', 'ignore', 'inherit'],
  },
);

const catalogue = [];
const sources = [];
for (const spec of SERVERS) {
  const pkgDir = join(dir, 'node_modules', spec.pkg);
  const manifest = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8'));
  const bin = typeof manifest.bin === 'string' ? manifest.bin : Object.values(manifest.bin ?? {})[0];
  if (bin === undefined) {
    process.stderr.write(`${spec.pkg}: no bin, skipped\n`);
    continue;
  }
  try {
    const tools = await listTools(spec, join(pkgDir, bin));
    for (const tool of tools) {
      catalogue.push({
        server: spec.server,
        name: tool.name,
        ...(tool.title === undefined ? {} : { title: tool.title }),
        description: tool.description ?? '',
        inputSchema: tool.inputSchema,
      });
    }
    sources.push({ server: spec.server, package: spec.pkg, version: manifest.version, tools: tools.length });
    process.stderr.write(`${spec.pkg}@${manifest.version}: ${tools.length} tools\n`);
  } catch (error) {
    process.stderr.write(`${spec.pkg}@${manifest.version}: could not list (${error.message}), skipped\n`);
  }
}

// Written as the repository's formatter would, so that a fresh collection diffs cleanly.
const output = join(here, 'catalogue.json');
const text = await format(JSON.stringify({ sources, tools: catalogue }, null, 2), {
  ...(await resolveConfig(output)),
  parser: 'json',
});
writeFileSync(output, text);
process.stderr.write(`${catalogue.length} tools from ${sources.length} servers -> catalogue.json\n`);
if (keep) process.stderr.write(`kept ${dir}\n`);
else rmSync(dir, { recursive: true, force: true });

async function listTools(spec, binPath) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [binPath, ...(spec.args?.(dir) ?? [])],
    env: { PATH: process.env.PATH ?? '', HOME: dir, ...(spec.env?.(dir) ?? {}) },
    cwd: dir,
    stderr: 'ignore',
  });
  const client = new Client({ name: 'toolsearch-collect', version: '1.0.0' });
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no tools within ${LIST_TIMEOUT_MS} ms`)), LIST_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      (async () => {
        await client.connect(transport);
        const tools = [];
        let cursor;
        do {
          const page = await client.listTools(cursor === undefined ? {} : { cursor });
          tools.push(...page.tools);
          cursor = page.nextCursor;
        } while (cursor !== undefined);
        return tools;
      })(),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
    await client.close().catch(() => {});
  }
}
