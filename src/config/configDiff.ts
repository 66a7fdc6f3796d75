/**
 * What an edit of the config file changes, for a reload while serving: which servers were added,
 * removed or changed (their entries compared as loaded, so a reformatted file or a moved entry
 * changes nothing), and which settings changed that a running gateway cannot take.
 */
import { canonicalJson } from '../lib/canonicalJson.js';
import type { ServerConfig, WardenConfig } from './types.js';

/** The servers of two configs, by name, sorted into what a reload does to each. */
export interface ServerChanges {
  /** In the new config only: started. */
  readonly added: readonly string[];
  /** In the old config only: stopped. */
  readonly removed: readonly string[];
  /** In both, with another entry (command, args, env, headers, filters, ...): restarted. */
  readonly changed: readonly string[];
  /** In both, the same entry: left running, subscriptions and all. */
  readonly unchanged: readonly string[];
}

/**
 * A server entry as it matters to the process and its calls: everything but where it is written
 * in the file, so that an edit of another entry, which moves this one's line, leaves it alone,
 * and but its flow labels and guardrails, which only the gateway reads (from the config in force,
 * on each call), so that changing them does not cost the server its process and subscriptions.
 * The env file's variables are already in `env`, so an edit of the env file shows here too.
 */
function entryKey(server: ServerConfig): string {
  const { source: _source, labels: _labels, guardrails: _guardrails, ...entry } = server;
  return canonicalJson(entry);
}

/** Whether two entries of one server would run the same process with the same settings. */
export function sameServer(a: ServerConfig, b: ServerConfig): boolean {
  return entryKey(a) === entryKey(b);
}

export function diffServers(before: readonly ServerConfig[], after: readonly ServerConfig[]): ServerChanges {
  const old = new Map(before.map((s) => [s.name, s]));
  const added: string[] = [];
  const changed: string[] = [];
  const unchanged: string[] = [];
  for (const server of after) {
    const was = old.get(server.name);
    if (was === undefined) added.push(server.name);
    else if (sameServer(was, server)) unchanged.push(server.name);
    else changed.push(server.name);
  }
  const names = new Set(after.map((s) => s.name));
  const removed = before.filter((s) => !names.has(s.name)).map((s) => s.name);
  return { added, removed, changed, unchanged };
}

/**
 * The settings a running gateway cannot change, by key, with why: their value from the start
 * stays until mcp-warden restarts. Everything else either applies per call (the call settings
 * under `gateway`, `confirmation`) or through the servers it belongs to.
 */
const RESTART_ONLY: readonly (readonly [key: string, of: (config: WardenConfig) => unknown, why: string])[] =
  [
    ['gateway.naming', (c) => c.gateway.naming, 'the tool names hosts hold would change under them'],
    ['gateway.startupTimeout', (c) => c.gateway.startupTimeoutMs, 'start-up is over'],
    [
      'gateway.connectTimeout',
      (c) => c.gateway.connectTimeoutMs,
      'the running servers took it at their start',
    ],
    ['gateway.restart', (c) => c.gateway.restart, 'the running servers took it at their start'],
    ['gateway.log', (c) => c.gateway.log, 'the log is opened at start'],
    ['gateway.maxMessageSize', (c) => c.gateway.maxMessageBytes, 'connections size their buffers at start'],
    ['policies', (c) => c.policies, 'the policy files are loaded and watched from the start'],
    ['audit', (c) => c.audit, 'the audit trail is opened at start'],
    ['pins', (c) => c.pins, 'the pins file is read and watched from the start'],
    ['telemetry', (c) => c.telemetry, 'the exporters are set up at start'],
    ['listen', (c) => c.listen, 'the listener is bound at start'],
    ['auth', (c) => c.auth, 'the listener checks tokens as set up at start'],
    ['catalog', (c) => c.catalog, "the hosts' tool lists are shaped by the settings read at start"],
    ['profiles', (c) => c.profiles, 'profiles and their listener paths are set up at start'],
  ];

/** A setting that changed and cannot change in a running gateway, and why. */
export interface RestartNeeded {
  readonly key: string;
  readonly why: string;
}

/** The settings that differ between `before` and `after` and need a restart to change. */
export function restartNeeded(before: WardenConfig, after: WardenConfig): RestartNeeded[] {
  const json = (value: unknown) => (value === undefined ? '' : canonicalJson(value));
  return RESTART_ONLY.filter(([, of]) => json(of(before)) !== json(of(after))).map(([key, , why]) => ({
    key,
    why,
  }));
}
