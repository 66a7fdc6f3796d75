/**
 * What an edit of `managed.yaml` while serving does to the locked settings and the audit
 * minimums, said in words for the log. Most of what can be locked is read per call and follows
 * the edit from the next call on; a few settings are set up once, when the gateway starts, and
 * cannot change under a running process. For those the edit is reported loudly, naming the key
 * and the file, and the value from the start stays in force until mcp-warden restarts: never a
 * silent mix of the two.
 */
import { formatKeyPath } from './interpolate.js';
import type { LockedSetting, ManagedSettings } from './managed.js';
import type { AuditConfig } from './types.js';

/**
 * Locked settings that cannot change in a running gateway, by key prefix, with why. Every other
 * lockable setting (confirmation, gateway.timeout and maxTimeout, gateway.repair,
 * gateway.validateArguments) is read per call and follows an edit.
 */
const RESTART_ONLY: readonly { readonly prefix: string; readonly why: string }[] = [
  { prefix: 'gateway.naming', why: 'the tool names hosts already hold would change under them' },
  { prefix: 'gateway.startupTimeout', why: 'it bounds start-up only, which is over' },
  { prefix: 'gateway.connectTimeout', why: 'the upstream supervisors take it when they start' },
  { prefix: 'gateway.restart', why: 'the upstream supervisors take it when they start' },
  { prefix: 'gateway.log', why: 'the log is opened when the gateway starts' },
  { prefix: 'gateway.maxMessageSize', why: 'the connections size their read buffers when they open' },
  { prefix: 'pins', why: 'the pins file is read and watched from the start' },
];

function restartOnly(dotted: string): string | undefined {
  return RESTART_ONLY.find((r) => dotted === r.prefix || dotted.startsWith(`${r.prefix}.`))?.why;
}

/** What the log says of one edit: `info` lines for what now applies, `errors` for what cannot. */
export interface ManagedSettingsNotes {
  readonly info: readonly string[];
  readonly errors: readonly string[];
}

/**
 * The notes for an edit from `before` to `after`, given the managed settings the gateway started
 * with (`atStart`, what the restart-only settings still follow) and the audit settings in force
 * (`audit`: at start, then as each edit left them) and asked for now (`nextAudit`).
 */
export function managedSettingsNotes(options: {
  readonly atStart: ManagedSettings;
  readonly before: ManagedSettings;
  readonly after: ManagedSettings;
  readonly startAudit: AuditConfig | undefined;
  readonly audit: AuditConfig | undefined;
  readonly nextAudit: AuditConfig | undefined;
}): ManagedSettingsNotes {
  const { atStart, before, after } = options;
  const file = after.file;
  const info: string[] = [];
  const errors: string[] = [];
  const byPath = (locks: readonly LockedSetting[]) => new Map(locks.map((l) => [formatKeyPath(l.path), l]));
  const was = byPath(before.lock);
  const now = byPath(after.lock);
  const start = byPath(atStart.lock);
  const json = (lock: LockedSetting | undefined) =>
    lock === undefined ? undefined : JSON.stringify(lock.value);
  for (const key of new Set([...was.keys(), ...now.keys()])) {
    const lock = now.get(key);
    if (json(was.get(key)) === json(lock)) continue;
    const why = restartOnly(key);
    if (why === undefined) {
      info.push(
        lock === undefined
          ? `managed settings ${file} no longer lock ${key}: the config's own value applies again from the next call`
          : `managed settings ${file}:${lock.line} lock.${key} is now ${json(lock)}: in force from the next call`,
      );
    } else if (json(start.get(key)) === json(lock)) {
      info.push(`managed settings ${file}: ${key} is back to the value in force since start`);
    } else {
      errors.push(
        `managed settings ${file}${lock === undefined ? '' : `:${lock.line}`} lock.${key} changed, but ${key} cannot change in a running gateway (${why}): the value in force since start stays until mcp-warden restarts`,
      );
    }
  }

  const { startAudit, audit, nextAudit } = options;
  const lineOf = (key: string) => {
    const line = after.audit?.lines[key] ?? before.audit?.lines[key];
    return line === undefined ? '' : `:${line}`;
  };
  if ((startAudit === undefined) !== (nextAudit === undefined))
    errors.push(
      nextAudit === undefined
        ? `managed settings ${file} no longer require an audit trail, but the trail opened at start stays open until mcp-warden restarts`
        : `managed settings ${file}${lineOf('required')} audit.required now requires an audit trail, and a trail cannot be opened in a running gateway (the audit stage and its file are set up at start): calls are refused until mcp-warden restarts and opens ${nextAudit.file ?? nextAudit.spoolDir}`,
    );
  else if (startAudit !== undefined && nextAudit !== undefined && startAudit.file !== nextAudit.file)
    errors.push(
      `managed settings ${file}${lineOf('file')} audit.file changed, but the trail cannot move to another file in a running gateway (its hash chain and rotation go on in the file opened at start): records keep going to ${startAudit.file ?? startAudit.spoolDir} until mcp-warden restarts`,
    );
  if (audit !== undefined && nextAudit !== undefined) {
    if (audit.onFailure !== nextAudit.onFailure)
      info.push(
        `audit.onFailure is now ${nextAudit.onFailure} (managed settings ${file}): from the next record`,
      );
    if (audit.fsync !== nextAudit.fsync)
      info.push(
        `audit.fsync is now ${String(nextAudit.fsync)} (managed settings ${file}): from the next record`,
      );
    const names = (config: AuditConfig) => (config.sinks ?? []).map((s) => s.name);
    if (JSON.stringify(audit.sinks ?? []) !== JSON.stringify(nextAudit.sinks ?? []))
      info.push(
        `audit sinks are now ${names(nextAudit).join(', ') || 'none'} (managed settings ${file}): from the next record`,
      );
  }
  return { info, errors };
}
