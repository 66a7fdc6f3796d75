import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../../src/config/defaults.js';
import { loadConfig, parseConfigText, type Env } from '../../src/config/load.js';
import type { StdioServerConfig, WardenConfig } from '../../src/config/types.js';
import { ConfigError, formatConfigIssue } from '../../src/config/issues.js';
import { thrownIssues } from './configIssues.js';

const DIR = path.resolve('/srv/warden');
const FILE = path.join(DIR, 'proxy.config.yaml');

function parse(text: string, env: Env = {}): WardenConfig {
  return parseConfigText(text, { file: FILE, env }).config;
}

/** The messages exactly as the CLI prints them, one per issue. */
function issuesOf(text: string, env: Env = {}): string[] {
  return thrownIssues(() => parse(text, env));
}

const F = FILE; // keeps the expected messages below readable

describe('parseConfigText: valid configs', () => {
  it('normalizes a full config: durations in ms, absolute paths, env expanded, file order kept', () => {
    const text = [
      '# every knob turned',
      'gateway:',
      '  naming:',
      '    separator: "--"',
      '    pattern: "^[a-z0-9_-]{1,48}$"',
      '    maxLength: 48',
      '  startupTimeout: 15s',
      '  connectTimeout: 1m',
      '  timeout: 90000ms',
      '  maxTimeout: 1h',
      '  maxMessageSize: 8MiB',
      '  restart: { initialDelay: 250ms, maxDelay: 1.5m, maxRestarts: 3, window: 2h }',
      '  repair: { textForStructured: false, invalidStructured: strip }',
      '  validateArguments: false',
      '  log: { level: debug, file: logs/warden.log }',
      'servers:',
      '  fs:',
      '    command: npx',
      '    args: ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}"]',
      '    env: { TOKEN: "${GITHUB_TOKEN}" }',
      '    cwd: ./data',
      '    timeout: 2m',
      '    maxTimeout: 45m',
      '    repair: { invalidStructured: off, missingStructured: off }',
      '    maxConcurrency: 4',
      '    trusted: true',
      '    validateArguments: true',
      '    tools:',
      '      include: ["read_*", "list_*"]',
      '      exclude: ["*_dangerous"]',
      '      timeouts:',
      '        read_big_*: 10m',
      '        "2": 1s',
      '        read_*: 30s',
      '  remote:',
      '    type: streamable-http',
      '    url: https://example.com/mcp',
      '    headers: { Authorization: "Bearer ${API_KEY}" }',
      '    namespace: false',
      '    maxQueue: 0',
      '    disabled: true',
      'policies: [policies/default.yaml, ./team.yaml, ../shared/org.yaml, /etc/warden/site.yaml]',
      'confirmation:',
      '  methods: [command, elicitation]',
      '  timeout: 45s',
      '  offerRemember: false',
      '  command:',
      '    command: ./hooks/approve',
      '    args: [--json]',
      '    env: { APPROVER: "${USER}" }',
      '    cwd: hooks',
      'audit:',
      '  file: ./audit/warden.jsonl',
      '  maxSize: 8MiB',
      '  maxFiles: 3',
      '  onFailure: continue',
      '  fsync: true',
      '  logResults: true',
      '  redact:',
      '    keys: [x_internal_token]',
      '    patterns: ["corp_[A-Za-z0-9]{20}", "/acme-[0-9a-f]{8}/i"]',
      '',
    ].join('\n');
    const config = parse(text, { HOME: '/home/me', GITHUB_TOKEN: 'ghp_x', API_KEY: 'k1', USER: 'ann' });
    expect(config).toEqual({
      file: FILE,
      gateway: {
        naming: { separator: '--', pattern: '^[a-z0-9_-]{1,48}$', maxLength: 48 },
        startupTimeoutMs: 15_000,
        connectTimeoutMs: 60_000,
        callTimeoutMs: 90_000,
        maxCallTimeoutMs: 3_600_000,
        repair: {
          textForStructured: false,
          invalidStructured: 'strip',
          structuredFromText: true,
          missingStructured: 'error',
        },
        validateArguments: false,
        reload: true,
        start: 'eager',
        maxMessageBytes: 8 * 1024 * 1024,
        restart: { initialDelayMs: 250, maxDelayMs: 90_000, maxRestarts: 3, windowMs: 7_200_000 },
        log: { level: 'debug', file: path.join(DIR, 'logs/warden.log') },
      },
      // Absolute, in file order, resolved against the config's folder.
      policies: [
        path.join(DIR, 'policies/default.yaml'),
        path.join(DIR, 'team.yaml'),
        path.resolve(DIR, '../shared/org.yaml'),
        '/etc/warden/site.yaml',
      ],
      confirmation: {
        methods: ['command', 'elicitation'],
        timeoutMs: 45_000,
        offerRemember: false,
        command: {
          command: path.join(DIR, 'hooks/approve'),
          args: ['--json'],
          env: { APPROVER: 'ann' },
          cwd: path.join(DIR, 'hooks'),
        },
      },
      audit: {
        file: path.join(DIR, 'audit/warden.jsonl'),
        spoolDir: path.join(DIR, 'audit/warden.jsonl.spool'),
        maxBytes: 8 * 1024 * 1024,
        maxFiles: 3,
        onFailure: 'continue',
        fsync: true,
        logResults: true,
        redact: { keys: ['x_internal_token'], patterns: ['corp_[A-Za-z0-9]{20}', '/acme-[0-9a-f]{8}/i'] },
      },
      catalog: {
        mode: 'auto',
        alwaysLoad: [],
        auto: { maxTools: 60, maxTokens: 20_000 },
        hostServerName: 'mcp-warden',
      },
      profiles: [],
      servers: [
        {
          name: 'fs',
          transport: 'stdio',
          command: 'npx',
          args: ['-y', '@modelcontextprotocol/server-filesystem', '/home/me'],
          env: { TOKEN: 'ghp_x' },
          cwd: path.join(DIR, 'data'),
          namespace: 'fs',
          timeoutMs: 120_000,
          maxTimeoutMs: 2_700_000,
          // The gateway's settings, with this server's two keys over them (`off` is a string in YAML 1.2).
          repair: {
            textForStructured: false,
            invalidStructured: 'off',
            structuredFromText: true,
            missingStructured: 'off',
          },
          // Its own setting over the gateway's.
          validateArguments: true,
          maxConcurrency: 4,
          maxQueue: 256,
          tools: {
            include: ['read_*', 'list_*'],
            exclude: ['*_dangerous'],
            // File order, even though JS objects would list the integer-like key "2" first.
            timeouts: [
              { glob: 'read_big_*', timeoutMs: 600_000 },
              { glob: '2', timeoutMs: 1_000 },
              { glob: 'read_*', timeoutMs: 30_000 },
            ],
          },
          disabled: false,
          trusted: true,
          shared: false,
          start: 'eager',
          clientRequests: { sampling: true, elicitation: true, roots: true },
          instructions: true,
          // Started by npx, a package launcher: its first start may install packages.
          startupTimeoutMs: 60_000,
          source: { file: FILE, line: 17 },
        },
        {
          name: 'remote',
          transport: 'http',
          url: 'https://example.com/mcp',
          headers: { Authorization: 'Bearer k1' },
          namespace: null,
          // No section of its own: the gateway's settings as they are.
          repair: {
            textForStructured: false,
            invalidStructured: 'strip',
            structuredFromText: true,
            missingStructured: 'error',
          },
          // The gateway's setting.
          validateArguments: false,
          maxConcurrency: 16,
          maxQueue: 0,
          tools: { include: [], exclude: [], timeouts: [] },
          disabled: true,
          trusted: false,
          shared: false,
          start: 'eager',
          clientRequests: { sampling: true, elicitation: true, roots: true },
          instructions: true,
          // The gateway's window.
          startupTimeoutMs: 15_000,
          source: { file: FILE, line: 35 },
        },
      ],
    });
    // Absent, not `timeoutMs: undefined`: consumers test with `'timeoutMs' in server`.
    expect(config.servers[1]).not.toHaveProperty('timeoutMs');
    expect(config.servers[1]).not.toHaveProperty('maxTimeoutMs');
  });

  it('fills every default for a minimal config', () => {
    const config = parse('servers:\n  echo:\n    command: node\n');
    expect(config.gateway).toEqual(DEFAULTS.gateway);
    expect(config.policies).toEqual([]);
    expect(config.confirmation).toEqual({
      methods: ['elicitation', 'command'],
      timeoutMs: 30_000,
      offerRemember: true,
    });
    expect(config.confirmation).toEqual(DEFAULTS.confirmation);
    // No hook, and no audit trail: absent, not `undefined`.
    expect(config.confirmation).not.toHaveProperty('command');
    expect(config).not.toHaveProperty('audit');
    expect(config).not.toHaveProperty('pins');
    expect(config.gateway.log).not.toHaveProperty('file');
    expect(config.gateway.maxCallTimeoutMs).toBe(30 * 60_000);
    expect(config.gateway.repair).toEqual({
      textForStructured: true,
      invalidStructured: 'error',
      structuredFromText: true,
      missingStructured: 'error',
    });
    expect(config.servers).toEqual([
      {
        name: 'echo',
        transport: 'stdio',
        command: 'node',
        args: [],
        env: {},
        cwd: DIR, // the config file's folder
        namespace: 'echo',
        repair: DEFAULTS.gateway.repair,
        validateArguments: true,
        maxConcurrency: 16,
        maxQueue: 256,
        tools: { include: [], exclude: [], timeouts: [] },
        disabled: false,
        trusted: false,
        shared: false,
        start: 'eager',
        clientRequests: { sampling: true, elicitation: true, roots: true },
        instructions: true,
        startupTimeoutMs: 10_000,
        source: { file: FILE, line: 2 },
      },
    ]);
  });

  it('accepts a Claude Desktop claude_desktop_config.json as-is', () => {
    const json = `{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_literal" }
    }
  }
}`;
    const { config, warnings } = parseConfigText(json, {
      file: path.join(DIR, 'claude_desktop_config.json'),
      env: {},
    });
    expect(warnings).toEqual([]);
    expect(config.servers.map((s) => [s.name, s.transport, s.source.line])).toEqual([
      ['filesystem', 'stdio', 3],
      ['github', 'stdio', 7],
    ]);
    expect((config.servers[1] as StdioServerConfig).env).toEqual({
      GITHUB_PERSONAL_ACCESS_TOKEN: 'ghp_literal',
    });
  });

  it('lists servers: entries before mcpServers: entries, each in file order', () => {
    const text = 'mcpServers:\n  z: { command: z }\nservers:\n  "2": { command: b }\n  "1": { command: a }\n';
    expect(parse(text).servers.map((s) => s.name)).toEqual(['2', '1', 'z']);
  });

  it('keeps a disabled server, still validated', () => {
    expect(parse('servers:\n  off: { command: x, disabled: true }\n').servers[0]?.disabled).toBe(true);
    expect(issuesOf('servers:\n  off: { disabled: true, comand: x }\n')).toEqual([
      `${F}:2:26: servers.off.comand: unknown key "comand" (did you mean "command"?)`,
    ]);
  });

  it('accepts the "type" field when it agrees with command/url, and a $schema key', () => {
    const text = [
      '$schema: ../schema/proxy.config.schema.json',
      'servers:',
      '  a: { type: stdio, command: x }',
      '  b: { type: http, url: "http://localhost:3000/mcp" }',
      '  c: { type: streamable-http, url: "https://x.example/mcp" }',
    ].join('\n');
    expect(parse(text).servers.map((s) => s.transport)).toEqual(['stdio', 'http', 'http']);
  });

  it('reads pins: file relative to the config, onChange and onNew defaulted, frozen', () => {
    const config = parse('pins:\n  file: ./trust/tool-pins.json\nservers:\n  a: { command: x }\n');
    expect(config.pins).toEqual({
      file: path.join(DIR, 'trust/tool-pins.json'),
      onChange: 'block',
      onNew: 'pin',
    });
    expect(Object.isFrozen(config.pins)).toBe(true);
    const written = parse(
      'pins: { file: /var/pins.json, onChange: warn, onNew: block }\nservers:\n  a: { command: x }\n',
    );
    expect(written.pins).toEqual({ file: '/var/pins.json', onChange: 'warn', onNew: 'block' });
  });

  it('returns a deeply frozen result (assignment throws in strict mode)', () => {
    const config = parse(
      'servers:\n  a: { command: x, args: [y], env: { K: v } }\npolicies: [p.yaml]\naudit: { file: a.jsonl, redact: { patterns: [x] } }\n',
    );
    expect(Object.isFrozen(config.audit?.redact.patterns)).toBe(true);
    const server = config.servers[0] as StdioServerConfig;
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.gateway.restart)).toBe(true);
    expect(Object.isFrozen(server.tools.timeouts)).toBe(true);
    expect(Object.isFrozen(config.gateway.repair)).toBe(true);
    expect(Object.isFrozen(server.repair)).toBe(true);
    expect(Object.isFrozen(config.policies)).toBe(true);
    expect(Object.isFrozen(config.confirmation.methods)).toBe(true);
    expect(() => (config.confirmation.methods as string[]).push('command')).toThrow(TypeError);
    expect(() => {
      (config.gateway as { callTimeoutMs: number }).callTimeoutMs = 1;
    }).toThrow(TypeError);
    expect(() => (server.args as string[]).push('z')).toThrow(TypeError);
    expect(() => {
      (server.env as Record<string, string>)['K'] = 'changed';
    }).toThrow(TypeError);
    expect(() => {
      (server.source as { line: number }).line = 0;
    }).toThrow(TypeError);
  });
});

describe('parseConfigText: one problem, one exact message', () => {
  // [what, file text, messages]. Positions point at the offending key for unknown keys and
  // structural server problems, and at the value for bad values.
  const cases: [string, string, string[]][] = [
    [
      'unknown key, with did-you-mean at the key',
      'servers:\n  fs:\n    comand: npx\n',
      [`${F}:3:5: servers.fs.comand: unknown key "comand" (did you mean "command"?)`],
    ],
    [
      'unknown key, nothing close: lists the allowed keys',
      'gateway:\n  colour: blue\nservers:\n  a: { command: x }\n',
      [
        `${F}:2:3: gateway.colour: unknown key "colour"; allowed keys are: naming, startupTimeout, connectTimeout, start, idleTimeout, timeout, maxTimeout, maxMessageSize, restart, repair, validateArguments, reload, log, sandbox`,
      ],
    ],
    [
      'unknown top-level key',
      'server:\n  a: { command: x }\n',
      [
        `${F}:1:1: server: unknown key "server" (did you mean "servers"?)`,
        `${F}:1:1: no servers configured: add at least one under "servers" (or "mcpServers")`,
      ],
    ],
    [
      'wrong type: string for an integer',
      'servers:\n  a: { command: x, maxConcurrency: "4" }\n',
      [`${F}:2:36: servers.a.maxConcurrency: expected an integer, got a string`],
    ],
    [
      'wrong type: string for a list',
      'servers:\n  a: { command: x, args: "-y foo" }\n',
      [`${F}:2:26: servers.a.args: expected a list, got a string`],
    ],
    [
      'wrong type: number for a string says to quote it',
      'servers:\n  a:\n    command: x\n    env:\n      PORT: 8080\n',
      [
        `${F}:5:13: servers.a.env.PORT: expected a string, got a number (8080); put it in quotes to make it a string`,
      ],
    ],
    [
      'wrong type: empty value for a mapping points at the key',
      'servers:\n  a:\n',
      [`${F}:2:3: servers.a: expected a mapping, got an empty value`],
    ],
    [
      'bad enum: lists the values and suggests one',
      'gateway:\n  log:\n    level: warning\nservers:\n  a: { command: x }\n',
      [
        `${F}:3:12: gateway.log.level: expected one of "error", "warn", "info", "debug", got "warning" (did you mean "warn"?)`,
      ],
    ],
    [
      'bad enum: type',
      'servers:\n  a: { type: websocket, url: "https://x.example/ws" }\n',
      [`${F}:2:14: servers.a.type: expected one of "stdio", "http", "streamable-http", got "websocket"`],
    ],
    [
      'bad duration string',
      'gateway:\n  timeout: 5 minutes\nservers:\n  a: { command: x }\n',
      [
        `${F}:2:12: gateway.timeout: invalid duration "5 minutes": expected a string like "500ms", "30s", "2m", "1h" or "1.5s"`,
      ],
    ],
    [
      'negative duration number',
      'gateway:\n  restart: { window: -1 }\nservers:\n  a: { command: x }\n',
      [
        `${F}:2:22: gateway.restart.window: invalid duration -1: expected a string like "500ms", "30s", "2m", "1h" or "1.5s"`,
      ],
    ],
    [
      'duration of the wrong type',
      'servers:\n  a: { command: x, timeout: [1] }\n',
      [
        `${F}:2:29: servers.a.timeout: expected a duration (a string like "500ms", "30s", "2m", "1h" or "1.5s"), got a list`,
      ],
    ],
    [
      'duration beyond what timers support',
      'servers:\n  a: { command: x, tools: { timeouts: { "*": 1000h } } }\n',
      [
        `${F}:2:46: servers.a.tools.timeouts.*: invalid duration "1000h": at most 2147483647 ms (about 24.8 days) is supported`,
      ],
    ],
    [
      'server timeout longer than the (default) maxTimeout, at the value',
      'servers:\n  fs:\n    command: x\n    timeout: 2h\n',
      [`${F}:4:14: servers.fs.timeout: 2h is longer than maxTimeout (30m)`],
    ],
    [
      'gateway timeout longer than gateway maxTimeout',
      'gateway:\n  timeout: 10m\n  maxTimeout: 5m\nservers:\n  a: { command: x }\n',
      [`${F}:2:12: gateway.timeout: 10m is longer than maxTimeout (5m)`],
    ],
    [
      "a host file's timeout longer than the server maxTimeout; a number of ms is shown in units",
      'mcpServers:\n  a:\n    command: x\n    maxTimeout: 1m\n    timeout: 90000\n',
      [`${F}:5:14: mcpServers.a.timeout: 90s is longer than maxTimeout (1m)`],
    ],
    [
      'server timeout within its own maxTimeout but longer than gateway.maxTimeout is fine; a tool one beyond it is not',
      'gateway:\n  maxTimeout: 10m\nservers:\n  a: { command: x, timeout: 20m, maxTimeout: 1h, tools: { timeouts: { big: 2h } } }\n',
      [`${F}:4:76: servers.a.tools.timeouts.big: 2h is longer than maxTimeout (1h)`],
    ],
    [
      'bad repair enum: lists the values and suggests one',
      'gateway:\n  repair: { invalidStructured: errors }\nservers:\n  a: { command: x }\n',
      [
        `${F}:2:32: gateway.repair.invalidStructured: expected one of "error", "strip", "off", got "errors" (did you mean "error"?)`,
      ],
    ],
    [
      'false for a repair setting spelt "off"',
      'servers:\n  a:\n    command: x\n    repair: { missingStructured: false }\n',
      [
        `${F}:4:34: servers.a.repair.missingStructured: expected one of "error", "off", got a boolean (false) (did you mean "off"?)`,
      ],
    ],
    [
      'unknown repair key',
      'servers:\n  a:\n    command: x\n    repair:\n      textForStructure: false\n',
      [
        `${F}:5:7: servers.a.repair.textForStructure: unknown key "textForStructure" (did you mean "textForStructured"?)`,
      ],
    ],
    [
      'validateArguments of the wrong type, under a server',
      'servers:\n  a:\n    command: x\n    validateArguments: "no"\n',
      [`${F}:4:24: servers.a.validateArguments: expected true or false, got a string`],
    ],
    [
      'repair flag of the wrong type',
      'gateway:\n  repair: { structuredFromText: "yes" }\nservers:\n  a: { command: x }\n',
      [`${F}:2:33: gateway.repair.structuredFromText: expected true or false, got a string`],
    ],
    [
      'both command and url',
      'servers:\n  x:\n    command: npx\n    url: https://example.com/mcp\n',
      [
        `${F}:2:3: servers.x: server "x" has both "command" and "url"; use "command" for a stdio server or "url" for an HTTP server, not both`,
      ],
    ],
    [
      'neither command nor url',
      'servers:\n  x:\n    args: [a]\n',
      [
        `${F}:2:3: servers.x: server "x" needs "command" (to start a stdio server) or "url" (to reach an HTTP server)`,
      ],
    ],
    [
      'name clash between servers and mcpServers',
      'servers:\n  fs: { command: a }\nmcpServers:\n  fs: { command: b }\n',
      [
        `${F}:4:3: mcpServers.fs: server "fs" is already defined under "servers" (line 2); server names must be unique`,
      ],
    ],
    [
      'no servers at all',
      '# nothing yet\ngateway:\n  timeout: 1m\nservers: {}\n',
      [`${F}:2:1: no servers configured: add at least one under "servers" (or "mcpServers")`],
    ],
    [
      'invalid server name',
      'servers:\n  my server: { command: x }\n',
      [
        `${F}:2:3: servers["my server"]: invalid server name "my server": server names may use only letters, digits, "_" and "-", 1 to 64 characters`,
      ],
    ],
    [
      'invalid namespace string',
      'servers:\n  a: { command: x, namespace: "my.ns" }\n',
      [
        `${F}:2:31: servers.a.namespace: a namespace may use only letters, digits, "_" and "-" (or be false for no prefix)`,
      ],
    ],
    [
      'namespace: true',
      'servers:\n  a: { command: x, namespace: true }\n',
      [`${F}:2:31: servers.a.namespace: expected a string or false, got a boolean (true)`],
    ],
    [
      'naming pattern that does not compile',
      'gateway:\n  naming: { pattern: "^[a-z" }\nservers:\n  a: { command: x }\n',
      [
        `${F}:2:22: gateway.naming.pattern: not a valid JavaScript regular expression: /^[a-z/: Unterminated character class`,
      ],
    ],
    [
      'naming maxLength out of range',
      'gateway:\n  naming: { maxLength: 300 }\nservers:\n  a: { command: x }\n',
      [`${F}:2:24: gateway.naming.maxLength: must be at most 256, got 300`],
    ],
    [
      'empty command',
      'servers:\n  a: { command: "" }\n',
      [`${F}:2:17: servers.a.command: must not be empty`],
    ],
    [
      'url that is not http(s)',
      'servers:\n  a: { url: "ws://example.com/mcp" }\n',
      [`${F}:2:13: servers.a.url: expected an http:// or https:// URL`],
    ],
    [
      'url that does not parse',
      'servers:\n  a: { url: "https://exa mple.com" }\n',
      [`${F}:2:13: servers.a.url: not a valid URL`],
    ],
    [
      'type that disagrees with command',
      'servers:\n  a: { type: http, command: x }\n',
      [
        `${F}:2:14: servers.a.type: type "http" does not match "command": a server with "command" is a stdio server`,
      ],
    ],
    [
      'stdio-only key on an HTTP server',
      'servers:\n  a:\n    url: https://x.example/mcp\n    args: [--verbose]\n',
      [
        `${F}:4:5: servers.a.args: "args" applies only to stdio servers (with "command"), and this one has "url"`,
      ],
    ],
    [
      'acrossReplicas on an HTTP server',
      'servers:\n  a:\n    url: https://x.example/mcp\n    acrossReplicas: serial\n',
      [
        `${F}:4:5: servers.a.acrossReplicas: "acrossReplicas" applies only to stdio servers (with "command"), and this one has "url"`,
      ],
    ],
    [
      'acrossReplicas on a server every principal shares',
      'servers:\n  a:\n    command: x\n    shared: true\n    acrossReplicas: parallel\n',
      [
        `${F}:5:5: servers.a.acrossReplicas: applies only to a server that runs one process per principal, and this one has "shared: true"`,
      ],
    ],
    [
      'acrossReplicas that is neither serial nor parallel',
      'servers:\n  a: { command: x, acrossReplicas: one-at-a-time }\n',
      [`${F}:2:36: servers.a.acrossReplicas: expected one of "serial", "parallel", got "one-at-a-time"`],
    ],
    [
      'oauth on a stdio server',
      'servers:\n  a:\n    command: x\n    oauth: { clientId: c }\n',
      [
        `${F}:4:5: servers.a.oauth: "oauth" applies only to HTTP servers (with "url"), and this one has "command"`,
      ],
    ],
    [
      'oauth client secret without its client',
      'servers:\n  a:\n    url: https://x.example/mcp\n    oauth: { clientSecret: s }\n',
      [`${F}:4:14: servers.a.oauth.clientSecret: a client secret needs the clientId it belongs to`],
    ],
    [
      'oauth client metadata URL that is not https',
      'servers:\n  a:\n    url: https://x.example/mcp\n    oauth: { clientMetadataUrl: "http://x.example/c.json" }\n',
      [`${F}:4:33: servers.a.oauth.clientMetadataUrl: expected an https:// URL with a path`],
    ],
    [
      'token exchange without its client',
      'servers:\n  a:\n    url: https://x.example/mcp\n    oauth:\n      tokenExchange: { audience: crm }\n',
      [`${F}:5:7: servers.a.oauth.tokenExchange: missing required key "clientId"`],
    ],
    [
      'token exchange endpoint that is not https',
      'servers:\n  a:\n    url: https://x.example/mcp\n    oauth:\n      tokenExchange:\n        clientId: c\n        tokenEndpoint: http://idp.example/token\n',
      [
        `${F}:7:24: servers.a.oauth.tokenExchange.tokenEndpoint: must be an https URL (http only to a loopback address): the principal's token is sent there`,
      ],
    ],
    [
      'token exchange with post client authentication and no secret, and a resource with a fragment',
      'servers:\n  a:\n    url: https://x.example/mcp\n    oauth:\n      tokenExchange: { clientId: c, clientAuth: post, resource: "https://x.example/mcp#a" }\n',
      [
        `${F}:5:49: servers.a.oauth.tokenExchange.clientAuth: "post" sends the client secret in the form, and this entry has no clientSecret`,
        `${F}:5:65: servers.a.oauth.tokenExchange.resource: a resource indicator must not have a fragment (#...)`,
      ],
    ],
    [
      'empty tool glob',
      'servers:\n  a: { command: x, tools: { include: [""] } }\n',
      [`${F}:2:39: servers.a.tools.include[0]: must not be empty`],
    ],
    [
      'bad message size',
      'gateway:\n  maxMessageSize: 32MB\nservers:\n  a: { command: x }\n',
      [
        `${F}:2:19: gateway.maxMessageSize: invalid size "32MB": expected an integer number of bytes or a string like "512KiB", "32MiB" or "1GiB"`,
      ],
    ],
    [
      'unknown confirmation method: lists the methods and suggests one',
      'confirmation:\n  methods: [elicitation, commands]\nservers:\n  a: { command: x }\n',
      [
        `${F}:2:26: confirmation.methods[1]: expected one of "elicitation", "command", got "commands" (did you mean "command"?)`,
      ],
    ],
    [
      'a confirmation method listed twice, at the repetition',
      'confirmation:\n  methods: [command, elicitation, command]\nservers:\n  a: { command: x }\n',
      [
        `${F}:2:35: confirmation.methods[2]: "command" is already listed at confirmation.methods[0]; list each value once`,
      ],
    ],
    [
      'no confirmation methods at all',
      'confirmation: { methods: [] }\nservers:\n  a: { command: x }\n',
      [`${F}:1:26: confirmation.methods: must not be an empty list`],
    ],
    [
      'misspelt top-level section',
      'confirm:\n  timeout: 20s\nservers:\n  a: { command: x }\n',
      [`${F}:1:1: confirm: unknown key "confirm" (did you mean "confirmation"?)`],
    ],
    [
      'confirmation timeout that is not a duration',
      'confirmation:\n  timeout: half a minute\nservers:\n  a: { command: x }\n',
      [
        `${F}:2:12: confirmation.timeout: invalid duration "half a minute": expected a string like "500ms", "30s", "2m", "1h" or "1.5s"`,
      ],
    ],
    [
      'confirmation hook without a command',
      'confirmation:\n  command: { args: [--json] }\nservers:\n  a: { command: x }\n',
      [`${F}:2:3: confirmation.command: missing required key "command"`],
    ],
    [
      'confirmation hook: a misspelt key, and env checked as for servers',
      'confirmation:\n  command:\n    command: approve\n    arg: [-v]\n    env: { PORT: 8080 }\nservers:\n  a: { command: x }\n',
      [
        `${F}:4:5: confirmation.command.arg: unknown key "arg" (did you mean "args"?)`,
        `${F}:5:18: confirmation.command.env.PORT: expected a string, got a number (8080); put it in quotes to make it a string`,
      ],
    ],
    [
      'audit section without a file',
      'audit:\n  maxFiles: 3\nservers:\n  a: { command: x }\n',
      [`${F}:1:1: audit: missing required key "file"`],
    ],
    [
      'audit file that is the log file',
      'gateway:\n  log: { file: logs/warden.log }\naudit:\n  file: ./logs/../logs/warden.log\nservers:\n  a: { command: x }\n',
      [
        `${F}:4:9: audit.file: same file as gateway.log.file (line 2); the audit trail needs a file of its own`,
      ],
    ],
    [
      'bad audit onFailure: lists the values and suggests one',
      'audit: { file: a.jsonl, onFailure: blocking }\nservers:\n  a: { command: x }\n',
      [
        `${F}:1:36: audit.onFailure: expected one of "block", "continue", got "blocking" (did you mean "block"?)`,
      ],
    ],
    [
      'audit maxSize in the wrong unit',
      'audit: { file: a.jsonl, maxSize: 50MB }\nservers:\n  a: { command: x }\n',
      [
        `${F}:1:34: audit.maxSize: invalid size "50MB": expected an integer number of bytes or a string like "512KiB", "32MiB" or "1GiB"`,
      ],
    ],
    [
      'audit maxFiles below one',
      'audit: { file: a.jsonl, maxFiles: 0 }\nservers:\n  a: { command: x }\n',
      [`${F}:1:35: audit.maxFiles: must be at least 1, got 0`],
    ],
    [
      'redaction pattern that does not compile, at that pattern',
      'audit:\n  file: a.jsonl\n  redact:\n    patterns: ["corp_[A-Za-z0-9]{20}", "corp_[A-Z"]\nservers:\n  a: { command: x }\n',
      [
        `${F}:4:40: audit.redact.patterns[1]: not a valid JavaScript regular expression: /corp_[A-Z/: Unterminated character class`,
      ],
    ],
    [
      'redaction pattern with flags the redactor does not take',
      'audit:\n  file: a.jsonl\n  redact: { patterns: ["/corp_[a-z]{20}/gi"] }\nservers:\n  a: { command: x }\n',
      [`${F}:3:24: audit.redact.patterns[0]: regular expression flags may be i, m, s and u, got "gi"`],
    ],
    [
      'redaction key without a letter or digit',
      'audit:\n  file: a.jsonl\n  redact: { keys: ["--"] }\nservers:\n  a: { command: x }\n',
      [`${F}:3:20: audit.redact.keys[0]: a key name needs at least one letter or digit`],
    ],
    [
      'pins section without a file',
      'pins:\n  onChange: warn\nservers:\n  a: { command: x }\n',
      [`${F}:1:1: pins: missing required key "file"`],
    ],
    [
      'bad pins onChange: lists the values and suggests one',
      'pins: { file: pins.json, onChange: warning }\nservers:\n  a: { command: x }\n',
      [`${F}:1:36: pins.onChange: expected one of "block", "warn", got "warning" (did you mean "warn"?)`],
    ],
    [
      'misspelt pins key',
      'pins: { file: pins.json, onChage: block }\nservers:\n  a: { command: x }\n',
      [`${F}:1:26: pins.onChage: unknown key "onChage" (did you mean "onChange"?)`],
    ],
    [
      'empty policy path',
      'policies: [a.yaml, ""]\nservers:\n  a: { command: x }\n',
      [`${F}:1:20: policies[1]: must not be empty`],
    ],
    [
      'policies as a single string',
      'policies: policies/default.yaml\nservers:\n  a: { command: x }\n',
      [`${F}:1:11: policies: expected a list, got a string`],
    ],
    [
      'empty file',
      '',
      [`${F}:1:1: config file is empty; it needs at least a "servers" (or "mcpServers") section`],
    ],
    [
      'comments only',
      '# servers: later\n',
      [`${F}:1:1: config file is empty; it needs at least a "servers" (or "mcpServers") section`],
    ],
    [
      'a list instead of a mapping',
      '- command: npx\n',
      [`${F}:1:1: expected a mapping at the top level (with a "servers" or "mcpServers" key), got a list`],
    ],
    [
      'duplicate key (reported by yaml)',
      'servers:\n  a: { command: x }\n  a: { command: y }\n',
      [`${F}:3:3: servers.a: duplicate key "a"`],
    ],
    [
      'YAML syntax error, with its line',
      'servers:\n  a:\n    command: x\n   args: [y]\n',
      [`${F}:4:1: invalid YAML: All mapping items must start at the same column`],
    ],
    [
      'two YAML documents',
      'servers:\n  a: { command: x }\n---\nservers: {}\n',
      [
        `${F}:3:1: invalid YAML: the file holds more than one YAML document (a second "---"); a config file must hold exactly one`,
      ],
    ],
    [
      'a YAML tag we do not resolve',
      'servers:\n  a: { command: !env CMD }\n',
      [`${F}:2:17: invalid YAML: Unresolved tag: !env`],
    ],
    [
      'JSON with a missing comma: in JSON words, where JSON.parse stopped',
      '{\n  "servers": {\n    "a": { "command": "x" }\n    "b": { "command": "y" }\n  }\n}\n',
      [`${F}:4:5: invalid JSON: Expected ',' or '}' after property value`],
    ],
    [
      'JSON cut short',
      '{"servers": {"a": {"command": "x"}}',
      [`${F}:1:36: invalid JSON: Expected ',' or '}' after property value`],
    ],
    [
      'a list item indented deeper than the one above, which YAML would read as its text',
      'servers:\n  a:\n    command: x\n    args:\n      - --root\n       - /data\n',
      [
        `${F}:6:8: this "-" is indented deeper than the list item above it, so YAML reads it as more of that item's text ("--root - /data"); indent it as far as the item above to make it an item of its own, or quote the text if the dash belongs to it`,
      ],
    ],
    [
      'a front door without openid among its scopes',
      'auth:\n  issuer: https://idp.example\n  audience: https://mcp.example/mcp\n  frontDoor:\n    clientId: c\n    scopes: [email]\nservers:\n  a: { command: x }\n',
      [
        `${F}:6:13: auth.frontDoor.scopes: must include openid: the principal is taken from the identity provider's ID token, which only an OpenID sign-in returns (got email)`,
      ],
    ],
    [
      'a front door whose audience is not the gateway URL',
      'auth:\n  issuer: https://idp.example\n  audience: api://warden\n  frontDoor: { clientId: c }\nservers:\n  a: { command: x }\n',
      [
        `${F}:3:13: auth.audience: with auth.frontDoor the audience must be this gateway's /mcp URL as hosts connect to it (such as https://mcp.example.com/mcp), got "api://warden"`,
      ],
    ],
    [
      'a front door base URL with a path',
      'auth:\n  issuer: https://idp.example\n  audience: https://mcp.example/mcp\n  frontDoor: { clientId: c, baseUrl: "https://mcp.example/warden" }\nservers:\n  a: { command: x }\n',
      [
        `${F}:4:38: auth.frontDoor.baseUrl: must be an origin alone, such as https://mcp.example.com (the gateway serves /oauth/ and /.well-known/ at its root), got https://mcp.example/warden`,
      ],
    ],
    [
      'a front door base URL over plain http elsewhere than loopback',
      'auth:\n  issuer: https://idp.example\n  audience: https://mcp.example/mcp\n  frontDoor: { clientId: c, baseUrl: "http://mcp.example" }\nservers:\n  a: { command: x }\n',
      [
        `${F}:4:38: auth.frontDoor.baseUrl: must be an https URL (http only to a loopback address), got http://mcp.example`,
      ],
    ],
  ];

  it.each(cases)('%s', (_what, text, expected) => {
    expect(issuesOf(text)).toEqual(expected);
  });
});

describe('parseConfigText: a duration written as a bare number', () => {
  const unit = (n: number, effect: string) =>
    `a number without a unit is not accepted here: read as milliseconds, ${n} would ${effect} ${n} ms; write "${n}s" (that is, ${n * 1000}ms) for seconds, or "${n}ms" if that is meant`;
  it.each([
    [
      'servers.x.timeout',
      'servers:\n  x: { command: c, timeout: 60 }\n',
      `${F}:2:29: servers.x.timeout: ${unit(60, 'end every call after')}`,
    ],
    [
      'servers.x.maxTimeout',
      'servers:\n  x: { command: c, maxTimeout: 600 }\n',
      `${F}:2:32: servers.x.maxTimeout: ${unit(600, 'end every call after')}`,
    ],
    [
      'a tools.timeouts entry',
      'servers:\n  x: { command: c, tools: { timeouts: { "slow_*": 5 } } }\n',
      `${F}:2:51: servers.x.tools.timeouts.slow_*: ${unit(5, 'end every call after')}`,
    ],
    [
      'gateway.timeout',
      'gateway:\n  timeout: 90\nservers:\n  x: { command: c }\n',
      `${F}:2:12: gateway.timeout: ${unit(90, 'end every call after')}`,
    ],
    [
      'gateway.maxTimeout',
      'gateway:\n  maxTimeout: 1800\nservers:\n  x: { command: c }\n',
      `${F}:2:15: gateway.maxTimeout: a number without a unit is not accepted here, since it could mean seconds or milliseconds: write "1800ms" if milliseconds are meant, or "1800s" for seconds`,
    ],
    [
      'gateway.startupTimeout',
      'gateway:\n  startupTimeout: 10\nservers:\n  x: { command: c }\n',
      `${F}:2:19: gateway.startupTimeout: ${unit(10, 'stop waiting for the servers to start after')}`,
    ],
    [
      'gateway.connectTimeout',
      'gateway:\n  connectTimeout: 30\nservers:\n  x: { command: c }\n',
      `${F}:2:19: gateway.connectTimeout: ${unit(30, 'give up starting each server after')}`,
    ],
    [
      'a restart window',
      'gateway:\n  restart: { window: 60 }\nservers:\n  x: { command: c }\n',
      `${F}:2:22: gateway.restart.window: ${unit(60, 'count crashes only within')}`,
    ],
    [
      'confirmation.timeout',
      'confirmation:\n  timeout: 30\nservers:\n  x: { command: c }\n',
      `${F}:2:12: confirmation.timeout: ${unit(30, 'deny every confirmation not answered after')}`,
    ],
    [
      'a server timeout of 60000: the milliseconds reading first, in units',
      'servers:\n  x: { command: c, timeout: 60000 }\n',
      `${F}:2:29: servers.x.timeout: a number without a unit is not accepted here, since it could mean seconds or milliseconds: write "1m" (or "60000ms") if milliseconds are meant, or "60000s" for seconds`,
    ],
  ])('%s: an error saying what it would do and what to write', (_what, text, expected) => {
    expect(issuesOf(text)).toEqual([expected]);
  });

  it('accepts 0, which needs no unit', () => {
    expect(
      parse('gateway:\n  restart: { initialDelay: 0 }\nservers:\n  x: { command: c }\n').gateway.restart
        .initialDelayMs,
    ).toBe(0);
  });
});

describe("parseConfigText with badServers: 'mark-failed'", () => {
  const load = (text: string, env: Env = {}) =>
    parseConfigText(text, { file: FILE, env, badServers: 'mark-failed' });

  it('keeps a server whose variable is unset, env file missing or transport SSE, failed with why', () => {
    const { config, failedServers } = load(
      [
        'mcpServers:',
        '  ok: { command: c }',
        '  bad: { command: c, args: ["${NOPE}", "${NOPE2}"] }',
        '  sse: { type: sse, url: "https://example.com/sse" }',
        '  envs: { command: c, envFile: ./missing.env }',
        '',
      ].join('\n'),
    );
    expect(config.servers.map((s) => [s.name, s.failedAtLoad])).toEqual([
      ['ok', undefined],
      [
        'bad',
        `${F}:3:29: mcpServers.bad.args[0]: environment variable "NOPE" is not set (use \${NOPE:-default} to give a default); ${F}:3:40: mcpServers.bad.args[1]: environment variable "NOPE2" is not set (use \${NOPE2:-default} to give a default)`,
      ],
      [
        'sse',
        expect.stringMatching(/^\/srv\/warden\/proxy\.config\.yaml:4:16: mcpServers\.sse\.type: type "sse"/),
      ],
      [
        'envs',
        expect.stringMatching(/^\/srv\/warden\/proxy\.config\.yaml:5:32: mcpServers\.envs\.envFile: /),
      ],
    ]);
    expect(failedServers.map((f) => f.name)).toEqual(['bad', 'sse', 'envs']);
  });

  it('still refuses a mistake in the file, even inside a server entry', () => {
    expect(() => load('servers:\n  a: { command: c, args: ["${NOPE}"], timeout: 5 }\n')).toThrow(
      /servers\.a\.timeout: a number without a unit/,
    );
    expect(() => load('servers:\n  a: { comand: c }\n')).toThrow(/unknown key "comand"/);
  });

  it('still refuses problems outside the server entries, and a server name used twice', () => {
    expect(() => load('gateway:\n  timeout: 5\nservers:\n  a: { command: c }\n')).toThrow(ConfigError);
    expect(() => load('servers:\n  a: { command: c }\nmcpServers:\n  a: { command: c }\n')).toThrow(
      /server "a" is already defined/,
    );
  });
});

describe('parseConfigText: maxTimeout and repair', () => {
  it('accepts a timeout equal to maxTimeout, and a server raising the limit above the gateway', () => {
    const text = [
      'gateway: { timeout: 10m, maxTimeout: 10m }',
      'servers:',
      '  a: { command: x, timeout: 1h, maxTimeout: 2h, tools: { timeouts: { "*": 2h } } }',
    ].join('\n');
    const config = parse(text);
    expect(config.gateway).toMatchObject({ callTimeoutMs: 600_000, maxCallTimeoutMs: 600_000 });
    expect(config.servers[0]).toMatchObject({ timeoutMs: 3_600_000, maxTimeoutMs: 7_200_000 });
  });

  it('cuts an idle timeout that is not written to the limit that applies, so idle <= max always', () => {
    const text = [
      'gateway: { maxTimeout: 1m }',
      'servers:',
      '  inherits: { command: x }',
      '  longer: { command: x, maxTimeout: 1h }',
      '  shorter: { command: x, maxTimeout: 30s }',
    ].join('\n');
    const config = parse(text);
    // The 5 min default is cut to gateway.maxTimeout...
    expect(config.gateway).toMatchObject({ callTimeoutMs: 60_000, maxCallTimeoutMs: 60_000 });
    const [inherits, longer, shorter] = config.servers;
    // ...which servers without a limit of their own inherit as it is,
    expect(inherits).not.toHaveProperty('timeoutMs');
    expect(inherits).not.toHaveProperty('maxTimeoutMs');
    // while a server with a longer limit keeps the whole 5 min default, and one with a shorter limit is cut to it.
    expect(longer).toMatchObject({ timeoutMs: 300_000, maxTimeoutMs: 3_600_000 });
    expect(shorter).toMatchObject({ timeoutMs: 30_000, maxTimeoutMs: 30_000 });
  });

  it('does not compare timeouts with a maxTimeout that is itself invalid', () => {
    const forms = 'expected a string like "500ms", "30s", "2m", "1h" or "1.5s"';
    expect(issuesOf('servers:\n  a: { command: x, maxTimeout: soon, timeout: 2h }\n')).toEqual([
      `${F}:2:32: servers.a.maxTimeout: invalid duration "soon": ${forms}`,
    ]);
    expect(
      issuesOf('gateway:\n  maxTimeout: "${MAX}"\nservers:\n  a: { command: x, timeout: 2h }\n'),
    ).toEqual([
      `${F}:2:15: gateway.maxTimeout: environment variable "MAX" is not set (use \${MAX:-default} to give a default)`,
    ]);
  });

  it('reports every timeout beyond its limit, each at its own value', () => {
    const text = [
      'gateway:',
      '  timeout: 45m',
      'servers:',
      '  a:',
      '    command: x',
      '    timeout: 31m',
      '    tools:',
      '      timeouts: { quick: 1m, build_*: 1.5h }',
    ].join('\n');
    expect(issuesOf(text)).toEqual([
      `${F}:2:12: gateway.timeout: 45m is longer than maxTimeout (30m)`,
      `${F}:6:14: servers.a.timeout: 31m is longer than maxTimeout (30m)`,
      `${F}:8:39: servers.a.tools.timeouts.build_*: 1.5h is longer than maxTimeout (30m)`,
    ]);
  });

  it('merges a server repair section over the gateway one, key by key', () => {
    const text = [
      'gateway:',
      '  repair: { structuredFromText: false, missingStructured: off }',
      'mcpServers:',
      '  plain: { command: x }',
      '  strict: { command: x, repair: { missingStructured: error, invalidStructured: strip } }',
      '  empty: { command: x, repair: {} }',
    ].join('\n');
    const [plain, strict, empty] = parse(text).servers;
    const gateway = {
      textForStructured: true,
      invalidStructured: 'error',
      structuredFromText: false,
      missingStructured: 'off',
    };
    expect(plain?.repair).toEqual(gateway);
    expect(strict?.repair).toEqual({ ...gateway, missingStructured: 'error', invalidStructured: 'strip' });
    expect(empty?.repair).toEqual(gateway);
  });
});

describe('parseConfigText: policies, confirmation and audit', () => {
  const SERVERS = 'servers:\n  a: { command: x }\n';

  it('resolves policy paths against the config folder without checking that they exist', () => {
    const config = parse(`policies:\n  - ./nope/missing.yaml\n  - "\${POLICY_DIR}/org.yaml"\n${SERVERS}`, {
      POLICY_DIR: 'shared',
    });
    expect(config.policies).toEqual([path.join(DIR, 'nope/missing.yaml'), path.join(DIR, 'shared/org.yaml')]);
    expect(parse(`policies: []\n${SERVERS}`).policies).toEqual([]);
  });

  it('accepts "command" among the methods without a hook: the method is just unavailable', () => {
    const config = parse(`confirmation: { methods: [command] }\n${SERVERS}`);
    expect(config.confirmation).toEqual({ methods: ['command'], timeoutMs: 30_000, offerRemember: true });
    expect(config.confirmation).not.toHaveProperty('command');
  });

  it('leaves a bare hook program for a PATH lookup, and defaults its cwd to the config folder', () => {
    const bare = parse(`confirmation:\n  command: { command: approve-call }\n${SERVERS}`);
    expect(bare.confirmation.command).toEqual({ command: 'approve-call', args: [], env: {}, cwd: DIR });
    const absolute = parse(
      `confirmation:\n  command: { command: /usr/local/bin/approve, cwd: /tmp }\n${SERVERS}`,
    );
    expect(absolute.confirmation.command).toMatchObject({ command: '/usr/local/bin/approve', cwd: '/tmp' });
    // A hook alone does not change the methods.
    expect(absolute.confirmation.methods).toEqual(['elicitation', 'command']);
  });

  it('fills every audit default when only the file is given', () => {
    const config = parse(`audit:\n  file: audit.jsonl\n${SERVERS}`);
    expect(config.audit).toEqual({
      file: path.join(DIR, 'audit.jsonl'),
      spoolDir: path.join(DIR, 'audit.jsonl.spool'),
      maxBytes: 50 * 1024 * 1024,
      maxFiles: 5,
      onFailure: 'block',
      fsync: false,
      logResults: false,
      redact: { keys: [], patterns: [] },
    });
    expect(config.audit).toEqual({
      file: path.join(DIR, 'audit.jsonl'),
      spoolDir: path.join(DIR, 'audit.jsonl.spool'),
      ...DEFAULTS.audit,
    });
  });

  it('takes sizes as bytes too, and expands ${VAR} in the audit file', () => {
    const config = parse(`audit: { file: "\${AUDIT_DIR}/a.jsonl", maxSize: 1048576 }\n${SERVERS}`, {
      AUDIT_DIR: '/var/log/warden',
    });
    expect(config.audit).toMatchObject({ file: '/var/log/warden/a.jsonl', maxBytes: 1024 * 1024 });
  });

  it('allows the audit file next to the log file, or with the same name in another folder', () => {
    const text = (audit: string) =>
      `gateway:\n  log: { file: logs/warden.log }\naudit: { file: ${audit} }\n${SERVERS}`;
    expect(parse(text('logs/audit.jsonl')).audit?.file).toBe(path.join(DIR, 'logs/audit.jsonl'));
    expect(parse(text('warden.log')).audit?.file).toBe(path.join(DIR, 'warden.log'));
    // No log file: nothing to clash with.
    expect(parse(`audit: { file: warden.log }\n${SERVERS}`).audit?.file).toBe(path.join(DIR, 'warden.log'));
  });

  it('reports every repeated method, each where it repeats', () => {
    const text = `confirmation:\n  methods: [command, command, elicitation, elicitation]\n${SERVERS}`;
    expect(issuesOf(text)).toEqual([
      `${F}:2:22: confirmation.methods[1]: "command" is already listed at confirmation.methods[0]; list each value once`,
      `${F}:2:44: confirmation.methods[3]: "elicitation" is already listed at confirmation.methods[2]; list each value once`,
    ]);
  });

  it('reports every bad redaction pattern at its own index, next to type errors', () => {
    const text = [
      'audit:',
      '  file: a.jsonl',
      '  redact:',
      '    patterns:',
      '      - 42',
      '      - "tok_(["',
      '      - "fine_[0-9]+"',
      '      - "/x(/i"',
      SERVERS,
    ].join('\n');
    expect(issuesOf(text)).toEqual([
      `${F}:5:9: audit.redact.patterns[0]: expected a string, got a number (42); put it in quotes to make it a string`,
      `${F}:6:9: audit.redact.patterns[1]: not a valid JavaScript regular expression: /tok_([/: Unterminated character class`,
      `${F}:8:9: audit.redact.patterns[3]: not a valid JavaScript regular expression: /x(/i: Unterminated group`,
    ]);
  });

  it('rejects an empty audit section, and unknown keys in it with a suggestion', () => {
    expect(issuesOf(`audit:\n${SERVERS}`)).toEqual([
      `${F}:1:1: audit: expected a mapping, got an empty value`,
    ]);
    expect(issuesOf(`audit: { file: a.jsonl, maxsize: 10MiB }\n${SERVERS}`)).toEqual([
      `${F}:1:25: audit.maxsize: unknown key "maxsize" (did you mean "maxSize"?)`,
    ]);
  });
});

describe('parseConfigText: environment variables', () => {
  const gh = (value: string) => `servers:\n  gh:\n    command: gh-mcp\n    env:\n      TOKEN: "${value}"\n`;
  const envOf = (text: string, env: Env) => (parse(text, env).servers[0] as StdioServerConfig).env['TOKEN'];

  it('reports a missing variable with its name, the key path and the position', () => {
    expect(issuesOf(gh('${GITHUB_TOKEN}'), { OTHER: 'x' })).toEqual([
      `${F}:5:14: servers.gh.env.TOKEN: environment variable "GITHUB_TOKEN" is not set (use \${GITHUB_TOKEN:-default} to give a default)`,
    ]);
  });

  it.each<[string, Env, string]>([
    ['${T}', { T: 'abc' }, 'abc'],
    ['${T}', { T: '' }, ''], // set but empty counts as set
    ['Bearer ${T}!', { T: 'abc' }, 'Bearer abc!'],
    ['${T:-fallback}', {}, 'fallback'],
    ['${T:-fallback}', { T: '' }, 'fallback'], // as in shells: empty uses the default too
    ['${T:-fallback}', { T: 'set' }, 'set'],
    ['${T:-}', {}, ''],
    ['${T:-a:b-c}', {}, 'a:b-c'],
    ['$${T}', { T: 'abc' }, '${T}'], // escape
    ['$$${T}', { T: 'abc' }, '$${T}'], // "$$" then "${": only `$${` is special
    ['cost: $5', {}, 'cost: $5'],
    ['$$', {}, '$$'],
  ])('%j with %j gives %j', (value, env, expected) => {
    expect(envOf(gh(value), env)).toBe(expected);
  });

  it('reports malformed references', () => {
    expect(issuesOf(gh('${1X}'))).toEqual([
      `${F}:5:14: servers.gh.env.TOKEN: invalid variable reference "\${1X}": expected \${NAME}, \${NAME:-default}, \${env:NAME}, \${keychain:NAME}, \${userHome}, \${workspaceFolder}, \${workspaceFolderBasename}, \${pathSeparator} or \${/}; write $\${ for a literal "\${"`,
    ]);
    expect(issuesOf(gh('abc ${T'))).toEqual([
      `${F}:5:14: servers.gh.env.TOKEN: unterminated "\${" in "\${T": expected \${NAME}, \${NAME:-default}, \${env:NAME}, \${keychain:NAME}, \${userHome}, \${workspaceFolder}, \${workspaceFolderBasename}, \${pathSeparator} or \${/}; write $\${ for a literal "\${"`,
    ]);
  });

  it('does not look variables up on the env object prototype', () => {
    expect(issuesOf(gh('${constructor}'))).toEqual([
      `${F}:5:14: servers.gh.env.TOKEN: environment variable "constructor" is not set (use \${constructor:-default} to give a default)`,
    ]);
  });

  it('expands before durations are checked, and does not report a failed expansion twice', () => {
    const text = 'gateway:\n  timeout: "${T}"\nservers:\n  a: { command: x }\n';
    expect(parse(text, { T: '2m' }).gateway.callTimeoutMs).toBe(120_000);
    expect(issuesOf(text)).toEqual([
      `${F}:2:12: gateway.timeout: environment variable "T" is not set (use \${T:-default} to give a default)`,
    ]);
    expect(issuesOf(text, { T: 'soon' })).toEqual([
      `${F}:2:12: gateway.timeout: invalid duration "soon": expected a string like "500ms", "30s", "2m", "1h" or "1.5s"`,
    ]);
  });

  it('expands command, args, cwd, url, headers and gateway strings, but never keys', () => {
    const text = [
      'gateway:',
      '  log: { file: "${LOGS}/warden.log" }',
      'servers:',
      '  a:',
      '    command: "${BIN}"',
      '    args: ["--root", "${ROOT}"]',
      '    cwd: "${WORK}"',
      '    env: { "${KEY}": "v" }',
      '  b:',
      '    url: "https://${HOST}/mcp"',
      '    headers: { X-Key: "${KEY}" }',
    ].join('\n');
    const env = {
      LOGS: '/var/log',
      BIN: '/usr/bin/srv',
      ROOT: '/data',
      WORK: 'work',
      HOST: 'h.example',
      KEY: 'k',
    };
    const config = parse(text, env);
    const [a, b] = config.servers;
    expect(config.gateway.log.file).toBe('/var/log/warden.log');
    expect(a).toMatchObject({
      command: '/usr/bin/srv',
      args: ['--root', '/data'],
      cwd: path.join(DIR, 'work'),
    });
    expect(a).toMatchObject({ env: { '${KEY}': 'v' } });
    expect(b).toMatchObject({ url: 'https://h.example/mcp', headers: { 'X-Key': 'k' } });
  });
});

describe('parseConfigText: reporting', () => {
  it('reports every issue at once, in file order', () => {
    const text = [
      'gateway:',
      '  timeout: forever',
      '  log: { level: loud }',
      'servers:',
      '  fs:',
      '    comand: npx',
      '    args: "x"',
      '  gh:',
      '    command: gh',
      '    env: { TOKEN: "${GITHUB_TOKEN}" }',
      'mcpServers:',
      '  gh: { url: "https://x.example" }',
    ].join('\n');
    expect(issuesOf(text)).toEqual([
      `${F}:2:12: gateway.timeout: invalid duration "forever": expected a string like "500ms", "30s", "2m", "1h" or "1.5s"`,
      `${F}:3:17: gateway.log.level: expected one of "error", "warn", "info", "debug", got "loud"`,
      `${F}:6:5: servers.fs.comand: unknown key "comand" (did you mean "command"?)`,
      `${F}:7:11: servers.fs.args: expected a list, got a string`,
      `${F}:10:19: servers.gh.env.TOKEN: environment variable "GITHUB_TOKEN" is not set (use \${GITHUB_TOKEN:-default} to give a default)`,
      `${F}:12:3: mcpServers.gh: server "gh" is already defined under "servers" (line 8); server names must be unique`,
    ]);
  });

  it('throws a ConfigError carrying structured issues and the formatted text', () => {
    let caught: unknown;
    try {
      parse('servers:\n  fs:\n    comand: npx\n');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigError);
    const error = caught as ConfigError;
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.issues).toEqual([
      {
        file: FILE,
        line: 3,
        column: 5,
        path: 'servers.fs.comand',
        message: 'unknown key "comand" (did you mean "command"?)',
      },
    ]);
    expect(error.message).toBe(`${F}:3:5: servers.fs.comand: unknown key "comand" (did you mean "command"?)`);
  });

  it('formats issues as file:line:col: path: message', () => {
    const base = { file: '/x/c.yaml', line: 3, column: 5, path: 'servers.fs.comand', message: 'unknown key' };
    expect(formatConfigIssue(base)).toBe('/x/c.yaml:3:5: servers.fs.comand: unknown key');
    expect(formatConfigIssue({ ...base, path: '' })).toBe('/x/c.yaml:3:5: unknown key');
    expect(formatConfigIssue({ ...base, line: 0, column: 0, path: '' })).toBe('/x/c.yaml: unknown key');
  });
});

describe('loadConfig', () => {
  let tmp = '';
  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'warden-config-'));
    await mkdir(path.join(tmp, 'conf'));
    await writeFile(
      path.join(tmp, 'conf', 'warden.yaml'),
      'servers:\n  a:\n    command: x\n    cwd: ../work\npolicies: [missing.yaml]\naudit: { file: ../audit/a.jsonl }\n',
    );
  });
  afterAll(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  it('reads the file and resolves paths against its folder', async () => {
    const file = path.join(tmp, 'conf', 'warden.yaml');
    const { config } = await loadConfig(path.relative(process.cwd(), file), { env: {} });
    expect(config.file).toBe(file);
    expect((config.servers[0] as StdioServerConfig).cwd).toBe(path.join(tmp, 'work'));
    expect(config.servers[0]?.source).toEqual({ file, line: 2 });
    // Neither is read or created here: the policy loader and the audit writer deal with them.
    expect(config.policies).toEqual([path.join(tmp, 'conf', 'missing.yaml')]);
    expect(config.audit?.file).toBe(path.join(tmp, 'audit', 'a.jsonl'));
  });

  it('reports a missing file as one issue with line 0 and the OS reason', async () => {
    const file = path.join(tmp, 'nope.yaml');
    const error = await loadConfig(file, { env: {} }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues).toEqual([
      {
        file,
        line: 0,
        column: 0,
        path: '',
        message: 'cannot read config file: ENOENT: no such file or directory',
      },
    ]);
    expect((error as ConfigError).message).toBe(
      `${file}: cannot read config file: ENOENT: no such file or directory`,
    );
  });

  it('reports a directory given as the config file', async () => {
    await expect(loadConfig(tmp, { env: {} })).rejects.toThrow(
      `${tmp}: cannot read config file: EISDIR: illegal operation on a directory`,
    );
  });
});

describe('start and idleTimeout', () => {
  it("takes a server's own start and idleTimeout, else the gateway's", () => {
    const config = parse(
      'gateway:\n  start: lazy\n  idleTimeout: 10m\nservers:\n  a: { command: x }\n' +
        '  b: { command: x, start: eager, idleTimeout: 30s }\n',
    );
    expect(config.gateway).toMatchObject({ start: 'lazy', idleTimeoutMs: 600_000 });
    expect(config.servers.map((s) => [s.name, s.start, s.idleTimeoutMs])).toEqual([
      ['a', 'lazy', 600_000],
      ['b', 'eager', 30_000],
    ]);
  });

  it('starts eagerly and never stops an idle server by default', () => {
    const [server] = parse('servers:\n  a: { command: x }\n').servers;
    expect(server?.start).toBe('eager');
    expect(server?.idleTimeoutMs).toBeUndefined();
  });

  it('names the file, line and key of a bad start or idleTimeout', () => {
    expect(issuesOf('servers:\n  a: { command: x, start: later }\n')).toEqual([
      expect.stringMatching(/^\/srv\/warden\/proxy\.config\.yaml:2:\d+: servers\.a\.start: .*eager.*lazy/),
    ]);
    expect(issuesOf('gateway:\n  idleTimeout: 0s\nservers:\n  a: { command: x }\n')).toEqual([
      `${F}:2:16: gateway.idleTimeout: must be more than 0 (leave it out to never stop)`,
    ]);
    expect(issuesOf('servers:\n  a: { command: x, idleTimeout: 5 }\n')).toEqual([
      expect.stringMatching(
        /^\/srv\/warden\/proxy\.config\.yaml:2:\d+: servers\.a\.idleTimeout: a number without a unit/,
      ),
    ]);
  });
});
