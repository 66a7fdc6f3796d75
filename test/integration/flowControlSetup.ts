/**
 * What the flow-control tests share: fixture servers `web`, `files` and `mail` labelled untrusted,
 * private and egress, each keeping a record file of what reached it, and a host that answers the
 * gateway's confirmation questions.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { readRecord } from '../fixtures/fixtureProcess.js';
import {
  FAST_GATEWAY,
  fixture,
  tempDir,
  writeConfig,
  type ConnectOptions,
  type HostSession,
} from './harness.js';

export interface Setup {
  readonly dir: string;
  readonly config: string;
  readonly audit: string;
  /** The record file of each server: what reached it. */
  readonly record: (server: string) => string;
}

/**
 * Three fixture servers: `web`, `files` and `mail`, labelled by `labels` (server → labels in the
 * config), under the given `flow` section and policy text.
 */
export function setup(
  options: {
    readonly labels?: Record<string, string[]>;
    readonly flow?: Record<string, unknown>;
    readonly policy?: string;
    readonly extraArgs?: Record<string, string[]>;
    readonly extra?: Record<string, unknown>;
  } = {},
): Setup {
  const dir = tempDir('warden-flow-');
  const record = (server: string) => path.join(dir, `${server}.jsonl`);
  const labels = options.labels ?? { web: ['untrusted'], files: ['private'], mail: ['egress'] };
  const servers = Object.fromEntries(
    ['web', 'files', 'mail'].map((name) => [
      name,
      fixture(['--name', name, '--record', record(name), ...(options.extraArgs?.[name] ?? [])], {
        ...(labels[name] && { labels: labels[name] }),
      }),
    ]),
  );
  if (options.policy !== undefined) writeFileSync(path.join(dir, 'policy.yaml'), options.policy);
  const audit = path.join(dir, 'audit.jsonl');
  const config = writeConfig(
    {
      gateway: FAST_GATEWAY,
      audit: { file: audit },
      ...(options.policy !== undefined && { policies: ['policy.yaml'] }),
      ...(options.flow && { flow: options.flow }),
      ...options.extra,
      servers,
    },
    dir,
  );
  return { dir, config, audit, record };
}

/**
 * A host, connected by `connect` (the binary's `connectHost` or its in-process twin), that answers
 * every confirmation question with `action`, keeping the questions.
 */
export async function confirmingHost(
  connect: (config: string, options: ConnectOptions) => Promise<HostSession>,
  config: string,
  action: 'accept' | 'decline' = 'decline',
) {
  const asked: string[] = [];
  const session = await connect(config, {
    capabilities: { elicitation: { form: {} } },
    beforeConnect: (client) =>
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        asked.push((request.params as { message: string }).message);
        return { action } as never;
      }),
  });
  // Not a spread: the in-process twin's session has a `pid` getter that throws when read.
  return Object.assign(session, { asked });
}

export async function call(session: HostSession, name: string, text = name): Promise<CallToolResult> {
  return (await session.client.callTool({ name, arguments: { text } })) as CallToolResult;
}

export function text(result: CallToolResult): string {
  return result.content.map((c) => (c.type === 'text' ? c.text : '')).join('');
}

/** The texts of the `echo` calls a fixture server received, by its record file. */
export function callsReceived(file: string): string[] {
  return readRecord(file).flatMap((m) => {
    if (!('method' in m) || m.method !== 'tools/call') return [];
    const params = m.params as { name: string; arguments: { text?: string } };
    return params.name === 'echo' ? [String(params.arguments.text)] : [];
  });
}

export function auditRecords(file: string): Record<string, unknown>[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
