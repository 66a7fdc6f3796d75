/**
 * What other hosts' MCP config files hold besides what mcp-warden reads, dealt with before
 * interpolation and the schema check, so that a user can point mcp-warden at the file their host
 * already reads (FIELD_NOTES "Configuration"). A Claude Desktop `claude_desktop_config.json`
 * keeps the app's own settings (`globalShortcut`, `preferences`, and whatever later versions
 * add) next to `mcpServers`.
 *
 * What is ignored is named in a warning (file, line, key) and removed from the data, so neither
 * interpolation nor the schema sees it: a `${VAR}` in the host's own settings is not ours to
 * expand. Everything else keeps the strict checks.
 */
import { didYouMean } from './didYouMean.js';
import { TOP_LEVEL_KEYS } from './schema.js';
import type { IssueList } from './yamlSource.js';

type Data = Readonly<Record<string, unknown>>;

/**
 * `data` (the parsed file, top level a mapping) without what is ignored; warnings about it go to
 * `issues`.
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
    if (desktopShape && !TOP_LEVEL_KEYS.includes(key) && didYouMean(key, TOP_LEVEL_KEYS) === undefined) {
      issues.warn([key], 'key', 'ignored: not an mcp-warden setting');
    } else {
      kept.push([key, value]);
    }
  }
  // fromEntries defines own properties, so a `__proto__` key stays data, not a prototype.
  return Object.fromEntries(kept);
}
