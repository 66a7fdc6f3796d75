/**
 * The gateway as a user installs it: the files package.json ships, beside a node_modules that
 * holds only the runtime dependencies and what they need (linked from this checkout's), so
 * neither OpenTelemetry (optional) nor chart.js (a development dependency) is there. It serves
 * and writes its audit report with charts; a config that turns telemetry or an OTLP audit sink
 * on stops at start with the package it lacks and the command that installs it.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { FAST_GATEWAY, fixture, NODE, ROOT, runProcess, tempDir, writeConfig } from './harness.js';

interface Manifest {
  readonly files?: readonly string[];
  readonly dependencies?: Readonly<Record<string, string>>;
  readonly optionalDependencies?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly peerDependenciesMeta?: Readonly<Record<string, { optional?: boolean }>>;
}

function manifest(dir: string): Manifest {
  return JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Manifest;
}

/** What npm installs for a package: its dependencies and its peers that are not optional. */
function installedWith(pkg: Manifest): string[] {
  const peers = Object.keys(pkg.peerDependencies ?? {}).filter(
    (name) => pkg.peerDependenciesMeta?.[name]?.optional !== true,
  );
  return [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {}), ...peers];
}

/** The files `npm pack` would put in the package, as npm reads package.json's `files` globs. */
function packedFiles(): string[] {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const [pack] = JSON.parse(out) as { files: { path: string }[] }[];
  return (pack?.files ?? []).map((f) => f.path);
}

/**
 * A folder laid out as `npm install mcp-warden --omit=dev` leaves it: the packed files, and the
 * runtime dependencies' closure. A package nested in another's node_modules comes with it.
 */
function installCopy(): string {
  const dir = tempDir('warden-installed-');
  const own = manifest(ROOT);
  for (const entry of packedFiles()) {
    mkdirSync(path.dirname(path.join(dir, entry)), { recursive: true });
    cpSync(path.join(ROOT, entry), path.join(dir, entry));
  }
  const seen = new Set<string>();
  const queue = installedWith(own);
  for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
    const from = path.join(ROOT, 'node_modules', name);
    if (seen.has(name) || !existsSync(from)) continue;
    seen.add(name);
    const to = path.join(dir, 'node_modules', name);
    mkdirSync(path.dirname(to), { recursive: true });
    symlinkSync(from, to, 'dir');
    queue.push(...installedWith(manifest(from)));
  }
  return dir;
}

let installed: string;
let cli: string;
beforeAll(() => {
  installed = installCopy();
  cli = path.join(installed, 'dist/cli.js');
});

function serveConfig(extra: object): string {
  const dir = tempDir();
  return writeConfig(
    { gateway: FAST_GATEWAY, audit: { file: './audit.jsonl' }, servers: { up: fixture() }, ...extra },
    dir,
  );
}

describe('installed without its optional and development packages', () => {
  it('has neither OpenTelemetry nor chart.js, and has what it needs at run time', () => {
    expect(existsSync(path.join(installed, 'node_modules/@opentelemetry'))).toBe(false);
    expect(existsSync(path.join(installed, 'node_modules/chart.js'))).toBe(false);
    expect(existsSync(path.join(installed, 'node_modules/@modelcontextprotocol/sdk'))).toBe(true);
  });

  it('serves a call, and writes the audit report with its charting library inside', async () => {
    const config = serveConfig({});
    const transport = new StdioClientTransport({
      command: NODE,
      args: [cli, '--config', config],
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'warden-test-host', version: '1.0.0' });
    await client.connect(transport);
    const result = await client.callTool({ name: 'up__echo', arguments: { text: 'no otel' } });
    expect(JSON.stringify(result.content)).toContain('no otel');
    await client.close();

    const out = path.join(path.dirname(config), 'report.html');
    const run = await runProcess(NODE, [
      cli,
      'audit',
      'report',
      path.join(path.dirname(config), 'audit.jsonl'),
      '--html',
      out,
    ]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const html = readFileSync(out, 'utf8');
    // The library's own banner, and the global it defines, are in the page itself.
    expect(html).toMatch(/\* Chart\.js v4\.\d+\.\d+/);
    expect(html).toContain('window.Chart=');
  });

  it('with telemetry on, stops at start naming the missing package and the install command', async () => {
    const run = await runProcess(NODE, [cli, '--config', serveConfig({ telemetry: { traces: true } })]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      'mcp-warden: telemetry is configured, but the package @opentelemetry/api is not installed',
    );
    const command = /\n {2}(npm install .*)\n/.exec(run.stderr)?.[1];
    expect(command).toBeDefined();
    const wanted = manifest(ROOT).peerDependencies!;
    for (const name of ['@opentelemetry/api', '@opentelemetry/sdk-trace-base', '@opentelemetry/sdk-metrics'])
      expect(command).toContain(`${name}@${wanted[name]}`);
    // A message, not a stack trace.
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });

  it('with an OTLP audit sink, stops at start naming the missing package and the install command', async () => {
    const config = serveConfig({
      audit: { file: './audit.jsonl', sinks: [{ type: 'otlp', endpoint: 'http://127.0.0.1:9/v1/logs' }] },
    });
    const run = await runProcess(NODE, [cli, '--config', config]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^mcp-warden: the audit sink "otlp" \(type: otlp\) is configured, but the package @opentelemetry\/\S+ is not installed/m,
    );
    expect(run.stderr).toMatch(/\n {2}npm install .*@opentelemetry\/sdk-logs@\^[\d.]+.*\n/);
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });

  it('check says so too, before anything is started, and passes where the packages are', async () => {
    const telemetry = serveConfig({ telemetry: { metrics: true } });
    const run = await runProcess(NODE, [cli, 'check', '--config', telemetry]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /^mcp-warden: telemetry is configured, but the package @opentelemetry\/api is not installed/,
    );
    expect(run.stderr).toMatch(/\n {2}npm install @opentelemetry\/api@\S+ .*@opentelemetry\/sdk-metrics@/);
    const sink = serveConfig({
      audit: {
        file: './audit.jsonl',
        sinks: [{ type: 'otlp', name: 'siem', endpoint: 'http://127.0.0.1:9/v1/logs' }],
      },
    });
    const sinkRun = await runProcess(NODE, [cli, 'check', '--config', sink]);
    expect(sinkRun.code).toBe(2);
    expect(sinkRun.stderr).toContain('the audit sink "siem" (type: otlp) is configured, but the package');
    // This checkout has them (as development dependencies): the same configs are valid here.
    for (const config of [telemetry, sink]) {
      const here = await runProcess(NODE, [path.join(ROOT, 'dist/cli.js'), 'check', '--config', config]);
      expect(here.stderr).toBe('');
      expect(here.code).toBe(0);
    }
  });
});
