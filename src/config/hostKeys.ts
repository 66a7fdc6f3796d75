/**
 * What other hosts' MCP config files hold besides what mcp-warden reads, dealt with before
 * interpolation and the schema check, so that a user can point mcp-warden at the file their host
 * already reads. A Claude Desktop `claude_desktop_config.json`
 * keeps the app's own settings (`globalShortcut`, `preferences`, and whatever later versions
 * add) next to `mcpServers`; VS Code's `mcp.json` keeps `inputs` (the values it asks the user
 * for) next to `servers`; Cline, Roo Code, Cursor and VS Code add keys of their own to server
 * entries.
 *
 * What is ignored is named in a warning (file, line, key) and removed from the data, so neither
 * interpolation nor the schema sees it: a `${VAR}` in the host's own settings is not ours to
 * expand. Host keys that would change how a server runs, and that mcp-warden cannot honour, are
 * errors saying what to write instead. Everything else keeps the strict checks: an unknown key in
 * a server entry may be what starts the server right (`arguments`, `workingDirectory`), so only
 * the keys listed here are let through.
 */
import { didYouMean } from '../lib/didYouMean.js';
import { bareNumberMessage } from './duration.js';
import type { KeyPath } from './interpolate.js';
import { TOP_LEVEL_KEYS } from './schema.js';
import type { IssueList } from './yamlSource.js';

type Data = Readonly<Record<string, unknown>>;

/**
 * Lists of tools the host runs without asking the user (Cline's `autoApprove`, Roo Code's
 * `alwaysAllow`). Safe to ignore: they name tools as that host saw them, and dropping them relaxes
 * nothing; in mcp-warden the policy files decide what needs confirmation.
 */
const APPROVAL_LISTS: readonly string[] = ['autoApprove', 'alwaysAllow'];

/**
 * `data` (the parsed file, top level a mapping) without what is ignored; warnings and errors
 * about it go to `issues`. A top-level `inputs` list is ignored in any file.
 *
 * Unknown top-level keys are ignored only in the Claude Desktop shape: `mcpServers` and no
 * `servers`. A file with `servers` is written for mcp-warden, so there an unknown key stays an
 * error. Even in the Claude Desktop shape, a key close to one of ours (`polices`, `gatway`) is far
 * likelier a typo than a setting of the app: it is left for the schema to report with its
 * did-you-mean.
 */
export function setAsideHostKeys(data: Data, issues: IssueList): Data {
  const desktopShape = Object.hasOwn(data, 'mcpServers') && !Object.hasOwn(data, 'servers');
  const kept: [string, unknown][] = [];
  for (const [key, value] of Object.entries(data)) {
    if (key === 'inputs' && Array.isArray(value)) {
      // VS Code's list of values to ask the user for, next to `servers` as well. Only a list is
      // taken for it: anything else is no editor's, and the schema says what is wrong with it.
      issues.warn(
        [key],
        'key',
        "ignored: the editor's list of values to ask the user for; mcp-warden cannot ask, so a ${input:…} that uses one is an error",
      );
    } else if (
      desktopShape &&
      !TOP_LEVEL_KEYS.includes(key) &&
      didYouMean(key, TOP_LEVEL_KEYS) === undefined
    ) {
      issues.warn([key], 'key', 'ignored: not an mcp-warden setting');
    } else if ((key === 'servers' || key === 'mcpServers') && isRecord(value)) {
      kept.push([key, mapValues(value, (entry, name) => serverEntry([key, name], entry, issues))]);
    } else {
      kept.push([key, value]);
    }
  }
  // fromEntries defines own properties, so a `__proto__` key stays data, not a prototype.
  return Object.fromEntries(kept);
}

/**
 * One server entry without the host keys it may carry. Approval lists are ignored only under
 * `mcpServers`, the section other hosts write; under `servers` they stay unknown keys. The other
 * checks apply under both, since VS Code writes `servers` too.
 */
function serverEntry(at: KeyPath, entry: unknown, issues: IssueList): unknown {
  if (!isRecord(entry)) return entry; // the schema reports it
  const foreign = at[0] === 'mcpServers';
  const kept = Object.entries(entry).filter(([key, value]) => {
    const keyPath = [...at, key];
    if (foreign && APPROVAL_LISTS.includes(key)) {
      issues.warn(
        keyPath,
        'key',
        "ignored: the host's list of tools to run without asking; in mcp-warden, policy files decide which calls need confirmation",
      );
      return false;
    }
    if (key === 'type' && value === 'sse') {
      issues.add(
        keyPath,
        'value',
        'type "sse" (the older HTTP+SSE transport) is not supported: mcp-warden reaches remote servers over Streamable HTTP; give that endpoint of the server (often ending in /mcp) as "url", with type "http" or no type',
        { scope: 'server' },
      );
      return false;
    }
    // Hosts disagree on the unit of a bare number here: Cline writes seconds (its settings offer
    // 30 s to 1 h), Claude Code milliseconds. A number under 1000 is almost surely seconds, and
    // read as milliseconds it would end every call almost at once.
    if (foreign && key === 'timeout' && typeof value === 'number' && value >= 0 && value < 1000) {
      issues.add(
        keyPath,
        'value',
        bareNumberMessage(value, { effect: 'end every call after', hostsWriteSeconds: true }),
      );
    }
    return true;
  });
  return Object.fromEntries(kept);
}

function mapValues(record: Data, map: (value: unknown, key: string) => unknown): Data {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, map(value, key)]));
}

function isRecord(value: unknown): value is Data {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
