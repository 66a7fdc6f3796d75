/**
 * The MCP config files VS Code and Cursor read (`.vscode/mcp.json`, `.cursor/mcp.json`,
 * `~/.cursor/mcp.json`) used as they are: the editors' variables (src/config/hostVariables.ts),
 * VS Code's `inputs` (src/config/hostKeys.ts) and `envFile` (src/config/envFile.ts).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandString } from '../../src/config/interpolate.js';
import { parseConfigText, type Env, type LoadedConfig } from '../../src/config/load.js';
import type { StdioServerConfig } from '../../src/config/types.js';
import { formatConfigIssue } from '../../src/config/issues.js';
import { thrownIssues } from './configIssues.js';

/** A project folder with `.vscode/` and `.cursor/` in it, made afresh for this file's tests. */
let project: string;
/** `<project>/.vscode/mcp.json`; it need not exist: the texts are parsed as if read from it. */
let vscodeFile: string;

beforeAll(() => {
  project = mkdtempSync(path.join(os.tmpdir(), 'warden-hostfiles-'));
  mkdirSync(path.join(project, '.vscode'));
  vscodeFile = path.join(project, '.vscode', 'mcp.json');
});

afterAll(() => {
  rmSync(project, { recursive: true, force: true });
});

function load(text: string, options: { file?: string; env?: Env } = {}): LoadedConfig {
  return parseConfigText(text, { file: options.file ?? vscodeFile, env: options.env ?? {} });
}

function issuesOf(text: string, options: { file?: string; env?: Env } = {}): string[] {
  return thrownIssues(() => load(text, options));
}

/** The first (stdio) server of a config that loads. */
function stdio(text: string, options: { file?: string; env?: Env } = {}): StdioServerConfig {
  return load(text, options).config.servers[0] as StdioServerConfig;
}

/** A one-server file whose server has `args: [arg]`, in the editors' JSON. */
function withArg(arg: string): string {
  return `{ "servers": { "s": { "command": "x", "args": [${JSON.stringify(arg)}] } } }\n`;
}

const FORMS =
  'expected ${NAME}, ${NAME:-default}, ${env:NAME}, ${keychain:NAME}, ${userHome}, ${workspaceFolder}, ${workspaceFolderBasename}, ${pathSeparator} or ${/}; write $${ for a literal "${"';

describe('the editors’ variables', () => {
  it('reads ${env:NAME} as ${NAME}, with or without a default', () => {
    const env = { TOKEN: 't0k', EMPTY: '' };
    expect(stdio(withArg('${env:TOKEN}/${TOKEN}'), { env }).args).toEqual(['t0k/t0k']);
    expect(stdio(withArg('${env:EMPTY:-d}|${env:UNSET:-}|${env:TOKEN:-d}'), { env }).args).toEqual([
      'd||t0k',
    ]);
  });

  it('names an unset ${env:NAME} and the key, at line:col, suggesting the form written', () => {
    const text = '{\n  "servers": {\n    "s": { "command": "x", "env": { "K": "${env:NOPE}" } }\n  }\n}\n';
    expect(issuesOf(text)).toEqual([
      `${vscodeFile}:3:42: servers.s.env.K: environment variable "NOPE" is not set (use \${env:NOPE:-default} to give a default)`,
    ]);
  });

  it('gives ${userHome} the home folder and ${pathSeparator}, ${/} the path separator', () => {
    const arg = '${userHome}|${pathSeparator}|${/}';
    expect(stdio(withArg(arg)).args).toEqual([`${os.homedir()}|${path.sep}|${path.sep}`]);
  });

  it('takes the editor’s names before an environment variable; ${env:…} still reads that', () => {
    const env = { userHome: '/elsewhere' };
    expect(stdio(withArg('${userHome}'), { env }).args).toEqual([os.homedir()]);
    expect(stdio(withArg('${env:userHome}'), { env }).args).toEqual(['/elsewhere']);
  });

  it.each<[string, string[], string]>([
    ['.vscode/mcp.json', ['proj', '.vscode', 'mcp.json'], 'proj'],
    ['.cursor/mcp.json', ['proj', '.cursor', 'mcp.json'], 'proj'],
    ['~/.cursor/mcp.json (the home folder)', ['home', 'me', '.cursor', 'mcp.json'], 'home/me'],
    ['a file in a plain folder', ['proj', 'tools', 'proxy.config.yaml'], 'proj/tools'],
    ['a file named like an editor folder', ['proj', '.vscode.json'], 'proj'],
  ])('gives ${workspaceFolder} for %s', (_what, parts, folder) => {
    const file = path.resolve('/', ...parts);
    const expected = path.resolve('/', folder);
    const server = stdio(withArg('${workspaceFolder}/src:${workspaceFolderBasename}'), { file });
    expect(server.args).toEqual([`${expected}/src:${path.basename(expected)}`]);
  });

  it('says ${workspaceFolder} needs a file when the config is only text', () => {
    const why =
      "comes from the config file's folder, and this config was given as text, not read from a file";
    expect(expandString('${workspaceFolder}/${workspaceFolderBasename}', { env: {} })).toEqual({
      value: '/',
      problems: [`\${workspaceFolder} ${why}`, `\${workspaceFolderBasename} ${why}`],
    });
    // With the file, the same text expands.
    expect(expandString('${workspaceFolderBasename}', { env: {}, configFile: vscodeFile }).problems).toEqual(
      [],
    );
  });

  it.each<[string, string]>([
    ['${config:editor.fontSize}', `invalid variable reference "\${config:editor.fontSize}": ${FORMS}`],
    ['${workspaceFolder:api}', `invalid variable reference "\${workspaceFolder:api}": ${FORMS}`],
    ['${env:MY-VAR}', `invalid variable reference "\${env:MY-VAR}": ${FORMS}`],
    ['${userHome', `unterminated "\${" in "\${userHome": ${FORMS}`],
    [
      '${userHome:-/root}',
      'invalid variable reference "${userHome:-/root}": a default (":-") may follow only the name of an environment variable, and ${userHome} is not one',
    ],
  ])('refuses %s, listing the forms it takes', (arg, message) => {
    const text = `servers:\n  s: { command: x, args: ["${arg}"] }\n`;
    expect(issuesOf(text)).toEqual([`${vscodeFile}:2:27: servers.s.args[0]: ${message}`]);
  });

  it('keeps $${ a literal "${", editor names included', () => {
    expect(stdio(withArg('$${workspaceFolder} $${env:X} $${input:y}')).args).toEqual([
      '${workspaceFolder} ${env:X} ${input:y}',
    ]);
  });
});

describe('where a server runs', () => {
  it.each<[string, string[], string | undefined, string]>([
    ['in the project for .vscode/mcp.json', ['proj', '.vscode', 'mcp.json'], undefined, 'proj'],
    ['in the project for .cursor/mcp.json', ['proj', '.cursor', 'mcp.json'], undefined, 'proj'],
    ['in the file’s folder for any other file', ['proj', 'cfg', 'proxy.config.yaml'], undefined, 'proj/cfg'],
    [
      'at a cwd relative to the file’s folder',
      ['proj', '.vscode', 'mcp.json'],
      'tools',
      'proj/.vscode/tools',
    ],
  ])('%s', (_what, parts, cwd, expected) => {
    const entry = cwd === undefined ? '{ command: x }' : `{ command: x, cwd: ${cwd} }`;
    const server = stdio(`servers:\n  s: ${entry}\n`, { file: path.resolve('/', ...parts) });
    expect(server.cwd).toBe(path.resolve('/', expected));
  });

  it('so an entry starting mcp-warden with this file, named from the project, is caught', () => {
    const text =
      '{ "servers": { "warden": { "command": "npx", "args": ["mcp-warden", "--config", ".vscode/mcp.json"] } } }\n';
    expect(issuesOf(text)).toEqual([
      `${vscodeFile}:1:81: servers.warden.args[2]: this server is mcp-warden reading this same file, so each gateway would start another without end; keep the servers mcp-warden fronts in a file of their own and give that file here`,
    ]);
  });
});

describe('${input:ID}', () => {
  const cannotAsk = (id: string, name: string, asked = ''): string =>
    `\${input:${id}} is a value the editor asks the user for${asked}, and mcp-warden cannot ask: its stdin and stdout carry the host's MCP messages. ` +
    `Pass the value in an environment variable instead and write \${env:${name}} here; ` +
    `"env": { "${name}": "\${input:${id}}" } in the editor's entry that starts mcp-warden has the editor ask for it`;

  /** A VS Code file with two inputs, one a password with a prompt, one without a prompt. */
  const VSCODE = [
    '{',
    '  "inputs": [',
    '    { "type": "promptString", "id": "github-token", "description": "GitHub personal access token", "password": true },',
    '    { "type": "pickString", "id": "apiKey", "options": ["a", "b"] }',
    '  ],',
    '  "servers": {',
    '    "github": {',
    '      "command": "docker",',
    '      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "${input:github-token}" },',
    '      "args": ["run", "--key=${input:apiKey}", "${input:9lives}"]',
    '    }',
    '  }',
    '}',
    '',
  ].join('\n');

  it('is an error naming the input and the key, with its prompt when the file gives one', () => {
    expect(issuesOf(VSCODE)).toEqual([
      `${vscodeFile}:9:48: servers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN: ${cannotAsk('github-token', 'GITHUB_TOKEN', ' (it asks "GitHub personal access token")')}`,
      `${vscodeFile}:10:23: servers.github.args[1]: ${cannotAsk('apiKey', 'API_KEY')}`,
      `${vscodeFile}:10:48: servers.github.args[2]: ${cannotAsk('9lives', 'INPUT_9LIVES')}`,
    ]);
  });

  it('is an error in a Cursor-shaped file too, and whatever the environment holds', () => {
    const text =
      '{ "mcpServers": { "s": { "url": "https://x.example/mcp", "headers": { "A": "${input:a}" } } } }\n';
    expect(issuesOf(text, { env: { a: 'set', A: 'set' } })).toEqual([
      `${vscodeFile}:1:76: mcpServers.s.headers.A: ${cannotAsk('a', 'A')}`,
    ]);
  });
});

describe('inputs at the top level', () => {
  const why =
    "ignored: the editor's list of values to ask the user for; mcp-warden cannot ask, so a ${input:…} that uses one is an error";

  it('is skipped with a warning next to servers, and nothing in it is expanded', () => {
    const text = [
      '{',
      '  "servers": { "s": { "type": "stdio", "command": "x" } },',
      '  "inputs": [{ "type": "promptString", "id": "t", "description": "${NOT_SET}" }]',
      '}',
      '',
    ].join('\n');
    const { config, warnings } = load(text);
    expect(warnings.map(formatConfigIssue)).toEqual([`${vscodeFile}:3:3: inputs: ${why}`]);
    expect(config.servers.map((s) => s.name)).toEqual(['s']);
  });

  it('gets the same warning, not the generic one, next to mcpServers', () => {
    const text = 'inputs: []\nmcpServers:\n  s: { command: x }\nglobalShortcut: x\n';
    expect(load(text).warnings.map(formatConfigIssue)).toEqual([
      `${vscodeFile}:1:1: inputs: ${why}`,
      `${vscodeFile}:4:1: globalShortcut: ignored: not an mcp-warden setting`,
    ]);
  });

  it('is left to the schema when it is not a list', () => {
    expect(issuesOf('inputs: { t: 1 }\nservers:\n  s: { command: x }\n')).toEqual([
      `${vscodeFile}:1:1: inputs: unknown key "inputs"; allowed keys are: gateway, policies, flow, confirmation, audit, pins, guardrails, telemetry, rateLimits, store, listen, auth, catalog, profiles, servers, mcpServers`,
    ]);
  });
});

describe('envFile', () => {
  /** Writes `text` as `name` in the project folder (or under it); returns its absolute path. */
  function envFile(name: string, text: string): string {
    const file = path.join(project, name);
    writeFileSync(file, text);
    return file;
  }

  it('gives a stdio server the file’s variables, with env winning, values taken as written', () => {
    envFile(
      '.vscode/dev.env',
      '# a comment\nA=from-file\nB=from-file\nexport C="quoted ${HOME} value"\nD=x # trailing\n',
    );
    const text = [
      'servers:',
      '  s:',
      '    command: x',
      '    envFile: dev.env', // relative: the config file's folder
      '    env: { B: from-env, E: "${E_SRC}" }',
      '',
    ].join('\n');
    expect(stdio(text, { env: { E_SRC: 'e', HOME: '/nope' } }).env).toEqual({
      A: 'from-file',
      B: 'from-env',
      C: 'quoted ${HOME} value',
      D: 'x',
      E: 'e',
    });
  });

  it('expands the path first, so ${workspaceFolder}/.env finds the project’s file', () => {
    envFile('.env', 'FROM_PROJECT=1\n');
    const text = '{ "mcpServers": { "s": { "command": "x", "envFile": "${workspaceFolder}/.env" } } }\n';
    expect(stdio(text).env).toEqual({ FROM_PROJECT: '1' });
  });

  it('reads a file that starts with a byte-order mark', () => {
    envFile('bom.env', '\uFEFFFIRST=1\nSECOND=2\n');
    const text = '{ "servers": { "s": { "command": "x", "envFile": "../bom.env" } } }\n';
    expect(stdio(text).env).toEqual({ FIRST: '1', SECOND: '2' });
  });

  it('is an error, naming the file and the reason, when the file cannot be read', () => {
    const text = [
      'servers:',
      '  a: { command: x, envFile: missing.env }',
      '  b: { command: x, envFile: "${workspaceFolder}" }',
      '',
    ].join('\n');
    expect(issuesOf(text)).toEqual([
      `${vscodeFile}:2:29: servers.a.envFile: cannot read env file ${path.join(project, '.vscode', 'missing.env')}: ENOENT: no such file or directory`,
      `${vscodeFile}:3:29: servers.b.envFile: cannot read env file ${project}: EISDIR: illegal operation on a directory`,
    ]);
  });

  it('is an error on an HTTP server, and when it is not a string', () => {
    const text = [
      'servers:',
      '  web: { url: "https://x.example/mcp", envFile: .env }',
      '  s: { command: x, envFile: [.env] }',
      '',
    ].join('\n');
    expect(issuesOf(text)).toEqual([
      `${vscodeFile}:2:40: servers.web.envFile: "envFile" applies only to stdio servers (with "command"), and this one has "url"`,
      `${vscodeFile}:3:29: servers.s.envFile: expected a string, got a list`,
    ]);
  });

  it('does not report the file of a path whose ${VAR} is unset twice', () => {
    const text = 'servers:\n  s: { command: x, envFile: "${ENV_DIR}/.env" }\n';
    expect(issuesOf(text)).toEqual([
      `${vscodeFile}:2:29: servers.s.envFile: environment variable "ENV_DIR" is not set (use \${ENV_DIR:-default} to give a default)`,
    ]);
  });
});

describe('a whole VS Code file', () => {
  it('loads as the editor reads it, with one warning for its inputs', () => {
    writeFileSync(path.join(project, '.env.local'), 'LOCAL=yes\n');
    const text = [
      '{',
      '  "inputs": [{ "type": "promptString", "id": "token", "password": true }],',
      '  "servers": {',
      '    "local": {',
      '      "type": "stdio",',
      '      "command": "node",',
      '      "args": ["${workspaceFolder}${/}server.js", "--home=${userHome}"],',
      '      "envFile": "${workspaceFolder}/.env.local",',
      '      "env": { "TOKEN": "${env:MY_TOKEN}" }',
      '    },',
      '    "remote": { "type": "http", "url": "https://x.example/mcp", "headers": { "X-Key": "${env:KEY}" } }',
      '  }',
      '}',
      '',
    ].join('\n');
    const { config, warnings } = load(text, { env: { MY_TOKEN: 'tok', KEY: 'k' } });
    expect(warnings.map((w) => `${w.line}:${w.column} ${w.path}`)).toEqual(['2:3 inputs']);
    const [local, remote] = config.servers;
    expect(local).toMatchObject({
      transport: 'stdio',
      args: [`${project}${path.sep}server.js`, `--home=${os.homedir()}`],
      env: { LOCAL: 'yes', TOKEN: 'tok' },
    });
    expect(remote).toMatchObject({ transport: 'http', headers: { 'X-Key': 'k' } });
  });
});
