/**
 * What `mcp-warden managed show` and `check` print about the organisation's managed settings:
 * where they came from, what they hold, and which configured servers they block.
 */
import { readFile } from 'node:fs/promises';
import {
  describeRule,
  MANAGED_DIR_VARIABLE,
  MANAGED_FILE_NAME,
  parseManagedText,
  type ManagedSettings,
} from '../config/managed.js';
import { watchFiles } from '../lib/watchFiles.js';
import type { ConfigIssue } from '../config/issues.js';
import type { WardenConfig } from '../config/types.js';
import { formatKeyPath } from '../config/load.js';

/** The effective managed settings, one section each, for a person to read. */
export function formatManaged(
  managed: ManagedSettings | undefined,
  where: { readonly dir: string; readonly fromVariable: boolean },
): string {
  const source = where.fromVariable ? ` (set by ${MANAGED_DIR_VARIABLE})` : '';
  if (managed === undefined)
    return `no managed settings: ${where.dir}/${MANAGED_FILE_NAME} does not exist${source}\n`;
  const lines = [`managed settings from ${managed.file}${source}`, ''];
  lines.push("policies (tried before the user's):");
  if (managed.policies.length === 0) lines.push('  none');
  for (const file of managed.policies) lines.push(`  ${file}`);
  lines.push('', 'servers:');
  lines.push(
    managed.allow === undefined
      ? '  allow: any server not denied'
      : managed.allow.length === 0
        ? '  allow: none (every server is blocked)'
        : '  allow only:',
  );
  for (const rule of managed.allow ?? []) lines.push(`    ${describeRule(rule, managed)}`);
  lines.push(managed.deny.length === 0 ? '  deny: none' : '  deny:');
  for (const rule of managed.deny) lines.push(`    ${describeRule(rule, managed)}`);
  lines.push('', 'audit minimums:');
  const audit = managed.audit;
  if (audit === undefined) lines.push('  none');
  else {
    lines.push(`  required: ${audit.required ? 'yes' : 'no'}`);
    if (audit.file !== undefined) lines.push(`  file: ${audit.file}`);
    if (audit.onFailure !== undefined)
      lines.push(
        `  onFailure: ${audit.onFailure}${audit.onFailure === 'block' ? ' (cannot be relaxed)' : ''}`,
      );
    if (audit.fsync !== undefined) lines.push(`  fsync: ${String(audit.fsync)}`);
    for (const sink of audit.sinks)
      lines.push(
        `  sink "${sink.name}" (${describeSink(sink.entry)}), always added  (${managed.file}:${sink.line})`,
      );
  }
  lines.push('', 'locked settings:');
  if (managed.lock.length === 0) lines.push('  none');
  for (const locked of managed.lock)
    lines.push(
      `  ${formatKeyPath(locked.path)}: ${JSON.stringify(locked.value)}  (${managed.file}:${locked.line})`,
    );
  lines.push('', HOST_LIST_REMINDER);
  return `${lines.join('\n')}\n`;
}

/**
 * Managed settings govern only the servers a host starts through the gateway: said wherever
 * they are shown, since a host whose own server list is open lets users go around them.
 */
const HOST_LIST_REMINDER =
  "reminder: these settings govern only servers started through mcp-warden; lock each host's own server list too (Claude Code managed-mcp.json, VS Code / Copilot MCP policies, Cursor team settings), see docs/guides/managed-settings-enforcement.md";

/** Where a sink's records go, and whether calls wait on it. */
function describeSink(entry: Readonly<Record<string, unknown>>): string {
  const to =
    entry.type === 'syslog'
      ? `syslog ${String(entry.host)}:${String(entry.port)}${entry.tls === true ? ' over TLS' : ''}`
      : `otlp ${String(entry.endpoint)}`;
  return entry.required === true ? `${to}, required` : to;
}

/**
 * One line for `check`: the layers in force and what the managed one holds. Nothing when the
 * machine has no managed settings: then the user's config is all there is.
 */
export function layersLine(config: WardenConfig, managed: ManagedSettings | undefined): string {
  if (managed === undefined) return '';
  const userPolicies = config.policies.length - managed.policies.length;
  return (
    `layers: managed ${managed.file} (${managed.policies.length} policy file(s) first, ` +
    `${managed.allow === undefined ? 'no allow list' : `${managed.allow.length} allow rule(s)`}, ` +
    `${managed.deny.length} deny rule(s), ${managed.lock.length} lock(s)${managed.audit ? ', audit minimums' : ''}), ` +
    `then user ${config.file} (${userPolicies} policy file(s))\n${HOST_LIST_REMINDER}\n`
  );
}

/** A warning per configured server the managed settings block, at the server's entry. */
export function blockedServerIssues(config: WardenConfig): ConfigIssue[] {
  return config.servers.flatMap((server) =>
    server.blockedByManaged === undefined
      ? []
      : [
          {
            file: server.source.file,
            line: server.source.line,
            column: 0,
            path: '',
            message: `server "${server.name}" is blocked by managed settings and will not be started: ${server.blockedByManaged}`,
          },
        ],
  );
}

/**
 * Watches the managed settings file while serving. A valid edit is handed to `apply` (which puts
 * it in force), with the version it replaces; an edit that breaks the file, or whose policy files
 * cannot be used, is reported and ignored: the last good version stays in force (fail closed,
 * never fall back to nothing). Edits are applied one at a time, in the order they were made.
 */
export function watchManaged(
  managed: ManagedSettings,
  logger: { info(message: string): void; warn(message: string): void; error(message: string): void },
  apply: (next: ManagedSettings, before: ManagedSettings) => Promise<void>,
): { close(): void } {
  let good = managed;
  let applying = Promise.resolve();
  const rejected = (error: unknown) =>
    logger.error(
      `managed settings ${managed.file} changed but cannot be used; the last good version stays in force:\n${error instanceof Error ? error.message : String(error)}`,
    );
  const reload = async () => {
    let next: ManagedSettings;
    try {
      next = parseManagedText(await readFile(managed.file, 'utf8'), managed.file);
    } catch (error) {
      return rejected(error);
    }
    if (JSON.stringify(next) === JSON.stringify(good)) return;
    try {
      await apply(next, good);
    } catch (error) {
      return rejected(error);
    }
    good = next;
    logger.info(
      `managed settings ${managed.file} reloaded: its policies, server lists, locks and audit minimums are in force`,
    );
  };
  return watchFiles({
    files: [managed.file],
    what: 'managed settings changes',
    onError: (message) => logger.error(message),
    onChange: () => {
      applying = applying.then(reload);
    },
  });
}
