/**
 * `sandbox:` of a stdio server and of the gateway, as written (`true`, `false`, `auto`, or the
 * grants), read into the one shape the rest of the gateway uses. The schema has checked the
 * shape; what is left to check here is what a schema cannot say: the domains.
 */
import { isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { KeyPath } from './interpolate.js';
import type { SandboxConfig } from './types.js';

/** Where a problem in the sandbox is reported: the loader's issue list. */
export interface SandboxIssues {
  add(keyPath: KeyPath, at: 'key' | 'value', message: string): void;
}

export interface ReadSandboxOptions {
  /** What relative folders are resolved against: the config file's folder. */
  readonly dir: string;
  readonly issues: SandboxIssues;
  /** The gateway's sandbox, for a server that does not write its own. */
  readonly inherited?: SandboxConfig;
  /** Expands `~`; default the user's home folder. */
  readonly home?: string;
}

/** The sandbox that grants nothing: no folder beyond the defaults, no network. */
export const CLOSED_SANDBOX: SandboxConfig = Object.freeze({
  auto: false,
  filesystem: Object.freeze({ read: [], write: [] }),
  network: false,
});

/** One label of a host name: letters, digits and inner hyphens, at most 63 characters. */
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
/** A host name, or `*.` and a domain for every name under it. */
const DOMAIN = new RegExp(`^(?:\\*\\.)?${LABEL}(?:\\.${LABEL})*$`, 'i');

/** A folder as written: `~`, `~/…`, absolute, or relative to the config file's folder. */
export function sandboxFolder(written: string, dir: string, home = os.homedir()): string {
  if (written === '~') return home;
  if (written.startsWith('~/')) return path.join(home, written.slice(2));
  return path.resolve(dir, written);
}

/** Why `domain` cannot be an allow-list entry; undefined when it can. */
export function domainProblem(domain: string): string | undefined {
  if (domain === '*' || domain === '*.*')
    return `"${domain}" would allow every host; leave "network" as { allow: [...] } of the hosts the server needs`;
  if (isIP(domain) !== 0 || DOMAIN.test(domain)) return undefined;
  return (
    `"${domain}" is not a host name: write one such as api.github.com, or *.example.com for ` +
    'the names under example.com (no scheme, path or port)'
  );
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

function record(value: unknown): Readonly<Record<string, unknown>> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * The sandbox `value` (written at `at`) asks for: undefined for none (`false`, or nothing written
 * and nothing inherited). Problems are added to `options.issues`.
 */
export function readSandbox(
  value: unknown,
  at: KeyPath,
  options: ReadSandboxOptions,
): SandboxConfig | undefined {
  if (value === undefined) return options.inherited;
  if (value === false) return undefined;
  if (value === true) return CLOSED_SANDBOX;
  if (value === 'auto') return { ...CLOSED_SANDBOX, auto: true };
  const written = record(value);
  if (written === undefined) return undefined; // the schema has said what is wrong
  const filesystem = record(written['filesystem']) ?? {};
  const folders = (key: string) =>
    strings(filesystem[key]).map((folder) => sandboxFolder(folder, options.dir, options.home));
  const network = record(written['network']);
  const allow = strings(network?.['allow']);
  allow.forEach((domain, index) => {
    const problem = domainProblem(domain);
    if (problem !== undefined) options.issues.add([...at, 'network', 'allow', index], 'value', problem);
  });
  return {
    auto: written['auto'] === true,
    filesystem: { read: folders('read'), write: folders('write') },
    network: network === undefined ? false : { allow: allow.map((domain) => domain.toLowerCase()) },
  };
}
