/**
 * The variables VS Code and Cursor define for their `mcp.json` files (`${userHome}`,
 * `${workspaceFolder}`, `${input:ID}`, ...), so that such a file means to mcp-warden what it
 * means to the editor. interpolate.ts asks here about each `${...}` before reading it as an
 * environment variable; an editor's name therefore wins over an environment variable of the same
 * name, which is still reachable as `${env:NAME}`.
 *
 * `${input:ID}` cannot be honoured: the editor answers it by asking the user, and mcp-warden has
 * no way to ask (its stdin and stdout carry the host's MCP messages). It is an error that says
 * how to pass the value instead.
 */
import { homedir } from 'node:os';
import path from 'node:path';

export interface HostVariableOptions {
  /**
   * Absolute path of the config file, where `${workspaceFolder}` comes from. Absent when the
   * config is only text: `${workspaceFolder}` and `${workspaceFolderBasename}` are then errors.
   */
  readonly configFile?: string;
  /** The file's `inputs`, by id (see `declaredInputs`); only used to word `${input:ID}` errors. */
  readonly inputs?: ReadonlyMap<string, DeclaredInput>;
}

/** What an editor knows of one of its `inputs` that helps the user recognise it in a message. */
export interface DeclaredInput {
  /** The prompt the editor shows, when the entry has one. */
  readonly description?: string;
}

/** What a `${...}` stands for: a value, a problem to report, or nothing (not an editor variable). */
export type HostVariable = { readonly value: string } | { readonly problem: string } | undefined;

/** The names an editor gives a value without any prefix (interpolate.ts's FORMS lists them too). */
const HOST_VARIABLE_NAMES: readonly string[] = [
  'userHome',
  'workspaceFolder',
  'workspaceFolderBasename',
  'pathSeparator',
  '/',
];

/**
 * The folder a config file belongs to, as the editors mean `${workspaceFolder}`: a file kept in
 * an editor's settings folder (`.vscode/mcp.json`, `.cursor/mcp.json`) belongs to the folder
 * around that one; any other file to its own folder. For `~/.cursor/mcp.json` that is the home
 * folder: mcp-warden cannot know which project the editor has open.
 */
export function workspaceFolder(configFile: string): string {
  const dir = path.dirname(configFile);
  return ['.vscode', '.cursor'].includes(path.basename(dir)) ? path.dirname(dir) : dir;
}

/** `body` is what stands between `${` and `}`. */
export function resolveHostVariable(body: string, options: HostVariableOptions): HostVariable {
  if (body.startsWith('input:')) return { problem: inputProblem(body.slice('input:'.length), options) };
  const [name = '', fallback] = splitDefault(body);
  if (!HOST_VARIABLE_NAMES.includes(name)) return undefined;
  if (fallback !== undefined) {
    return {
      problem: `invalid variable reference "\${${body}}": a default (":-") may follow only the name of an environment variable, and \${${name}} is not one`,
    };
  }
  if (name === 'userHome') return { value: homedir() };
  if (name === 'pathSeparator' || name === '/') return { value: path.sep };
  if (options.configFile === undefined) {
    return {
      problem: `\${${name}} comes from the config file's folder, and this config was given as text, not read from a file`,
    };
  }
  const folder = workspaceFolder(options.configFile);
  return { value: name === 'workspaceFolder' ? folder : path.basename(folder) };
}

/**
 * The ids of a file's `inputs` list, with their prompts. Entries without a string id are left
 * out (the editor would refuse them; mcp-warden only needs the list to word a message).
 */
export function declaredInputs(inputs: unknown): ReadonlyMap<string, DeclaredInput> {
  const found = new Map<string, DeclaredInput>();
  if (!Array.isArray(inputs)) return found;
  for (const input of inputs as unknown[]) {
    if (typeof input !== 'object' || input === null) continue;
    const { id, description } = input as Readonly<Record<string, unknown>>;
    if (typeof id !== 'string' || found.has(id)) continue;
    found.set(id, typeof description === 'string' && description !== '' ? { description } : {});
  }
  return found;
}

function inputProblem(id: string, options: HostVariableOptions): string {
  const description = options.inputs?.get(id)?.description;
  const asked = description === undefined ? '' : ` (it asks "${description}")`;
  const name = envNameFor(id);
  return (
    `\${input:${id}} is a value the editor asks the user for${asked}, and mcp-warden cannot ask: its stdin and stdout carry the host's MCP messages. ` +
    `Pass the value in an environment variable instead and write \${env:${name}} here; ` +
    `"env": { "${name}": "\${input:${id}}" } in the editor's entry that starts mcp-warden has the editor ask for it`
  );
}

/** `github-token` → `GITHUB_TOKEN`, `apiKey` → `API_KEY`: a name to suggest for an input's value. */
function envNameFor(id: string): string {
  const name = id
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .toUpperCase();
  return /^[A-Z_]/.test(name) ? name : `INPUT_${name}`;
}

/** `NAME:-default` → [NAME, default]; `NAME` → [NAME, undefined]. */
function splitDefault(body: string): [string, string | undefined] {
  const at = body.indexOf(':-');
  return at === -1 ? [body, undefined] : [body.slice(0, at), body.slice(at + 2)];
}
