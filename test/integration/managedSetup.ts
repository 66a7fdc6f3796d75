/**
 * The managed-settings scenarios' setup, shared by the built binary's tests
 * (test/integration/managed.test.ts) and the in-process ones (test/inprocess/managed*.test.ts):
 * a managed folder in a temp folder, given as MCP_WARDEN_MANAGED_DIR (the documented way to move
 * it), and what an OTLP receiver standing in for the organisation's SIEM got of the audit trail.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { OtlpReceiver } from '../fixtures/otlpReceiver.js';
import { FAST_GATEWAY, FIXTURE, fixture, NODE, tempDir, writeConfig } from './harness.js';

export interface ManagedFolder {
  readonly dir: string;
  /** Its managed.yaml. */
  readonly file: string;
  /** What points a gateway at it. */
  readonly env: { readonly MCP_WARDEN_MANAGED_DIR: string };
  /** Writes `text` as the new managed.yaml, as an administrator rolling out a change does. */
  edit(text: string): void;
}

/** A managed folder whose managed.yaml says `yaml`, with any policy files it names. */
export function managedDir(yaml: string, files: Record<string, string> = {}): ManagedFolder {
  const dir = tempDir('warden-managed-');
  const file = path.join(dir, 'managed.yaml');
  writeFileSync(file, yaml);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return {
    dir,
    file,
    env: { MCP_WARDEN_MANAGED_DIR: dir },
    edit: (text) => writeFileSync(file, text),
  };
}

/** The audit records an OTLP receiver got as logs (the sink's `warden` format: the record line). */
export function shippedRecords(receiver: OtlpReceiver): Record<string, unknown>[] {
  type LogsExport = {
    resourceLogs?: { scopeLogs?: { logRecords?: { body?: { stringValue?: string } }[] }[] }[];
  };
  return receiver.received
    .filter((r) => r.path === '/v1/logs')
    .flatMap((r) => (JSON.parse(r.body.toString('utf8')) as LogsExport).resourceLogs ?? [])
    .flatMap((rl) => (rl.scopeLogs ?? []).flatMap((sl) => sl.logRecords ?? []))
    .map((lr) => JSON.parse(lr.body?.stringValue ?? '{}') as Record<string, unknown>);
}

/** A config's `servers:` section with the fixture as `fx`, as YAML lines (and the final newline). */
export function fxServerLines(): string[] {
  return ['servers:', '  fx:', `    command: ${NODE}`, `    args: [${JSON.stringify(FIXTURE)}]`, ''];
}

/** The managed file requires an audit trail; the user's config has none. */
export function trailRequiredSetup() {
  const audit = path.join(tempDir(), 'org-audit.jsonl');
  const managed = managedDir(`
audit:
  required: true
  file: ${audit}
  onFailure: block
`);
  const config = writeConfig({ gateway: FAST_GATEWAY, servers: { fx: fixture() } });
  return { audit, managed, config };
}

/** The managed file asks for onFailure: block; the user's config says continue, at line 5. */
export function relaxedOnFailureSetup() {
  const mine = path.join(tempDir(), 'mine.jsonl');
  const managed = managedDir(`
audit:
  onFailure: block
`);
  const config = writeConfig(
    [
      'gateway:',
      '  startupTimeout: 5s',
      'audit:',
      `  file: ${mine}`,
      '  onFailure: continue',
      ...fxServerLines(),
    ].join('\n'),
  );
  return { mine, managed, config };
}

/**
 * Gateway locks (validation on, an 800 ms timeout, repair) and a server entry that would undo
 * each: validateArguments at line 7, timeout at line 8; one tool's timeout longer, one shorter.
 */
export function serverEntryAgainstLockSetup() {
  const managed = managedDir(`
lock:
  gateway:
    validateArguments: true
    timeout: 800ms
    repair:
      invalidStructured: error
`);
  const config = writeConfig(
    [
      'gateway:',
      '  startupTimeout: 5s',
      ...fxServerLines().slice(0, -1),
      '    validateArguments: false',
      '    timeout: 60s',
      '    repair:',
      '      invalidStructured: "off"',
      '    tools:',
      '      timeouts:',
      '        hang: 90s',
      '        echo: 200ms',
      '',
    ].join('\n'),
  );
  return { managed, config };
}

/**
 * A managed trail (and a sink at `endpoint`) against a user config writing the same file with a
 * redaction pattern that matches everything (line 8) and a tiny rotation (lines 5 and 6).
 */
export function userAuditAgainstTrailSetup(endpoint: string) {
  const work = tempDir();
  const trail = path.join(work, 'org-audit.jsonl');
  const managed = managedDir(`
audit:
  required: true
  file: ${trail}
  sinks:
    - name: org-siem
      type: otlp
      endpoint: ${endpoint}/v1/logs
`);
  const config = writeConfig(
    [
      'gateway:',
      '  startupTimeout: 5s',
      'audit:',
      `  file: ${trail}`,
      '  maxSize: 1KiB',
      '  maxFiles: 1',
      '  redact:',
      "    patterns: ['[\\s\\S]+', 'sk-live-[a-z0-9]+']",
      ...fxServerLines(),
    ].join('\n'),
    work,
  );
  return { trail, managed, config };
}

/**
 * A required managed sink at `endpoint`; a user config that says nothing of sinks (`quiet`), and
 * one that points a sink of that name elsewhere, optional, and relaxes onFailure (`redirecting`).
 */
export function managedSinkSetup(endpoint: string) {
  const managed = managedDir(`
audit:
  sinks:
    - name: org-siem
      type: otlp
      endpoint: ${endpoint}/v1/logs
      required: true
`);
  const quiet = writeConfig({
    gateway: FAST_GATEWAY,
    audit: { file: './audit.jsonl' },
    servers: { fx: fixture() },
  });
  const redirecting = writeConfig(
    [
      'gateway:',
      '  startupTimeout: 5s',
      'audit:',
      '  file: ./audit.jsonl',
      '  onFailure: continue',
      '  sinks:',
      '    - name: org-siem',
      '      type: otlp',
      '      endpoint: http://127.0.0.1:9/v1/logs',
      '      required: false',
      ...fxServerLines(),
    ].join('\n'),
  );
  return { managed, quiet, redirecting };
}

/** A managed policy that denies echo, and a user policy that would allow it. */
export function managedRuleOverUserSetup() {
  const audit = path.join(tempDir(), 'audit.jsonl');
  const managed = managedDir('policies: [org.yaml]\n', {
    'org.yaml':
      'rules:\n  - id: org-no-echo\n    match: { tool: echo }\n    action: deny\n    reason: The organisation does not allow echo.\n',
  });
  const userDir = tempDir();
  writeFileSync(
    path.join(userDir, 'mine.yaml'),
    'rules:\n  - id: my-echo\n    match: { tool: echo }\n    action: allow\n',
  );
  const config = writeConfig(
    { gateway: FAST_GATEWAY, audit: { file: audit }, policies: ['mine.yaml'], servers: { fx: fixture() } },
    userDir,
  );
  return { audit, managed, config };
}
