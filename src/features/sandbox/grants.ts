/**
 * What a sandboxed server is granted: what its `sandbox:` lists and, for `sandbox: auto`, what
 * the config and the policies already say it may touch. Pure apart from looking at the disk
 * (which arguments are folders), so that `check` shows exactly what a start would grant.
 */
import { statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { within } from '../../config/managedSandbox.js';
import type { SandboxConfig, SandboxLimits, StdioServerConfig } from '../../config/types.js';
import { matchesGlob } from '../../lib/glob.js';

/** The grants a server's process runs with, besides the system folders and its own program. */
export interface SandboxGrants {
  /** Folders it may read, absolute, sorted. */
  readonly read: readonly string[];
  /** Folders it may read and write, absolute, sorted (its private temp folder comes on top). */
  readonly write: readonly string[];
  /** `false`: no network; else the domains it may reach through the filtering proxy. */
  readonly network: false | { readonly allow: readonly string[] };
  /** Grants asked for (written or derived) that the managed settings' limits leave out, said as such. */
  readonly refused?: readonly string[];
}

/**
 * What `auto` reads of the policies: each rule's effect, the servers it is about and the folders
 * its `paths` condition names. The policy feature's `PolicySet` has this shape.
 */
export interface PolicyRules {
  readonly files: readonly {
    readonly rules: readonly {
      readonly action: string;
      readonly match: {
        readonly server: readonly string[] | null;
        readonly paths: { readonly spec: { readonly under: readonly string[] } } | null;
      };
    }[];
  }[];
}

export interface GrantsOptions {
  /** The policies in force: `auto` grants the folders their allow rules let this server use. */
  readonly policies?: PolicyRules;
  /** Expands `~` in policy folders; default the user's home folder. */
  readonly home?: string;
}

function isFolder(file: string): boolean {
  try {
    return statSync(file).isDirectory();
  } catch {
    return false;
  }
}

/** A policy folder as written (absolute, `~`, `~/…`, `file://`) as an absolute path; else undefined. */
function policyFolder(written: string, home: string): string | undefined {
  if (written === '~') return home;
  if (written.startsWith('~/')) return path.join(home, written.slice(2));
  if (written.startsWith('file://')) {
    try {
      return fileURLToPath(written);
    } catch {
      return undefined;
    }
  }
  return path.isAbsolute(written) ? path.normalize(written) : undefined;
}

/** Folders that allow rules of the policies let `server` use through path arguments. */
function policyFolders(server: string, policies: PolicyRules | undefined, home: string): string[] {
  const folders: string[] = [];
  for (const file of policies?.files ?? [])
    for (const rule of file.rules) {
      const paths = rule.match.paths;
      if (rule.action !== 'allow' || paths === null) continue;
      const servers = rule.match.server;
      if (servers !== null && !servers.some((glob) => matchesGlob(glob, server))) continue;
      for (const written of paths.spec.under) {
        const folder = policyFolder(written, home);
        if (folder !== undefined) folders.push(folder);
      }
    }
  return folders;
}

/** The host names of the http(s) URLs in `texts`. */
function urlHosts(texts: readonly string[]): string[] {
  const hosts: string[] = [];
  for (const text of texts)
    for (const match of text.matchAll(/\bhttps?:\/\/[^\s"'<>]+/gi)) {
      try {
        const host = new URL(match[0]).hostname.replace(/^\[|\]$/g, '');
        if (host !== '') hosts.push(host.toLowerCase());
      } catch {
        // Not a URL after all: nothing to grant.
      }
    }
  return hosts;
}

const sorted = (items: Iterable<string>): string[] => [...new Set(items)].sort();

/**
 * What `server` is granted under `sandbox`. `auto` adds: the folders named in its arguments and
 * its `roots:` (what a filesystem server is told to work in), the folders the policies' allow
 * rules give it through path arguments (read and write: the policy already lets its tools act
 * there), and the hosts of the URLs in its arguments and environment.
 */
export function sandboxGrants(
  server: StdioServerConfig,
  sandbox: SandboxConfig,
  options: GrantsOptions = {},
): SandboxGrants {
  const write = [...sandbox.filesystem.write];
  const domains = sandbox.network === false ? [] : [...sandbox.network.allow];
  if (sandbox.auto) {
    const roots = Array.isArray(server.clientRequests.roots) ? server.clientRequests.roots : [];
    const argumentFolders = server.args
      .filter((arg) => !arg.startsWith('-'))
      .map((arg) => path.resolve(server.cwd, arg))
      .filter(isFolder);
    write.push(...argumentFolders, ...roots);
    write.push(...policyFolders(server.name, options.policies, options.home ?? os.homedir()));
    domains.push(...urlHosts([...server.args, ...Object.values(server.env)]));
  }
  const writable = sorted(write);
  const grants: SandboxGrants = {
    read: sorted(sandbox.filesystem.read).filter((folder) => !writable.includes(folder)),
    write: writable,
    network: sandbox.network === false && domains.length === 0 ? false : { allow: sorted(domains) },
  };
  return sandbox.limits === undefined ? grants : limited(grants, sandbox.limits);
}

/** Whether `pattern` (a host, or `*.` and a domain) covers `domain` (a host or such a pattern). */
function covers(pattern: string, domain: string): boolean {
  if (pattern === domain) return true;
  if (!pattern.startsWith('*.')) return false;
  const suffix = pattern.slice(1);
  return domain.endsWith(suffix) || domain === pattern.slice(2);
}

/** `grants` cut to what the managed `limits` let users grant; what is cut is listed in `refused`. */
function limited(grants: SandboxGrants, limits: SandboxLimits): SandboxGrants {
  const refused: string[] = [];
  const keep = (
    items: readonly string[],
    allowed: readonly string[] | undefined,
    what: string,
    test: (item: string, limit: string) => boolean,
  ) =>
    items.filter((item) => {
      if (allowed === undefined || allowed.some((limit) => test(item, limit))) return true;
      refused.push(`${what} ${item} (beyond ${limits.source})`);
      return false;
    });
  const readable = limits.read === undefined ? undefined : [...limits.read, ...(limits.write ?? [])];
  const network =
    grants.network === false
      ? false
      : {
          allow: keep(grants.network.allow, limits.network, 'network', (domain, limit) =>
            covers(limit, domain),
          ),
        };
  return {
    read: keep(grants.read, readable, 'read', within),
    write: keep(grants.write, limits.write, 'write', within),
    network: network !== false && network.allow.length === 0 ? false : network,
    ...(refused.length > 0 && { refused }),
  };
}

/** The grants in one line, for `check` and messages. */
export function describeGrants(grants: SandboxGrants): string {
  const list = (items: readonly string[]) => (items.length === 0 ? 'nothing' : items.join(', '));
  const network = grants.network === false ? 'off' : `only ${list(grants.network.allow)}`;
  const refused = grants.refused === undefined ? '' : `; not granted: ${grants.refused.join(', ')}`;
  return `read ${list(grants.read)}; write ${list(grants.write)}; network ${network}${refused}`;
}
