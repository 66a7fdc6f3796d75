/**
 * The managed settings' `sandbox:` section: which stdio servers must run sandboxed, and the most
 * that users may grant them. Read with the rest of `managed.yaml`, put on each server entry once
 * the user's config is normalized.
 */
import path from 'node:path';
import { matchesGlob } from '../lib/glob.js';
import type { KeyPath } from './interpolate.js';
import { domainProblem, sandboxFolder } from './sandbox.js';
import type { SandboxConfig, SandboxLimits, ServerConfig } from './types.js';

export interface ManagedSandbox {
  /** `true`: every stdio server; a list: the servers whose names match one of these globs. */
  readonly require: boolean | readonly string[];
  /** The grants users may give, when capped; each list absent: not capped. */
  readonly limits?: Omit<SandboxLimits, 'source'>;
  /** Where each key is written (`managed.yaml:LINE sandbox.require`). */
  readonly where: Readonly<Record<string, string>>;
}

export interface ManagedSandboxReader {
  readonly issues: { add(keyPath: KeyPath, at: 'key' | 'value', message: string): void };
  readonly lineOf: (keyPath: KeyPath) => number;
  readonly dir: string;
  readonly file: string;
}

const KEYS = ['require', 'maxRead', 'maxWrite', 'maxNetwork'] as const;

function list(reader: ManagedSandboxReader, value: unknown, key: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value) && value.every((item) => typeof item === 'string' && item !== '')) return value;
  reader.issues.add(['sandbox', key], 'value', 'must be a list of non-empty strings');
  return undefined;
}

/** `sandbox:` of `managed.yaml`; undefined when it has none. Problems go to `reader.issues`. */
export function readManagedSandbox(reader: ManagedSandboxReader, value: unknown): ManagedSandbox | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    reader.issues.add(['sandbox'], 'value', `must be a mapping with keys among ${KEYS.join(', ')}`);
    return undefined;
  }
  const section = value as Record<string, unknown>;
  for (const key of Object.keys(section))
    if (!(KEYS as readonly string[]).includes(key))
      reader.issues.add(['sandbox', key], 'key', `unknown key "${key}"; sandbox has ${KEYS.join(', ')}`);
  const require = section['require'];
  const required = typeof require === 'boolean' ? require : (list(reader, require, 'require') ?? false);
  const folders = (key: string) =>
    list(reader, section[key], key)?.map((folder) => sandboxFolder(folder, reader.dir));
  const maxNetwork = list(reader, section['maxNetwork'], 'maxNetwork');
  maxNetwork?.forEach((domain, index) => {
    const problem = domainProblem(domain);
    if (problem !== undefined) reader.issues.add(['sandbox', 'maxNetwork', index], 'value', problem);
  });
  const read = folders('maxRead');
  const write = folders('maxWrite');
  const limits = {
    ...(read && { read }),
    ...(write && { write }),
    ...(maxNetwork && { network: maxNetwork.map((domain) => domain.toLowerCase()) }),
  };
  const where = Object.fromEntries(
    Object.keys(section).map((key) => [
      key,
      `${reader.file}:${reader.lineOf(['sandbox', key])} sandbox.${key}`,
    ]),
  );
  return { require: required, ...(Object.keys(limits).length > 0 && { limits }), where };
}

/**
 * `server` as the managed sandbox settings let it run: sandboxed (`sandbox: auto` when it has
 * none) where they require it, and with their limits on what it is granted. `refusal` says what
 * was overridden, when the user had turned the sandbox off.
 */
export function underManagedSandbox(
  server: ServerConfig,
  managed: ManagedSandbox | undefined,
): { server: ServerConfig; refusal?: string } {
  if (managed === undefined || server.transport !== 'stdio') return { server };
  const required =
    managed.require === true ||
    (Array.isArray(managed.require) && managed.require.some((glob) => matchesGlob(glob, server.name)));
  const limits: SandboxLimits | undefined =
    managed.limits === undefined
      ? undefined
      : { ...managed.limits, source: Object.values(managed.where).join(', ') };
  const own = server.sandbox;
  if (own === undefined && !required) return { server };
  const sandbox: SandboxConfig = {
    ...(own ?? { auto: true, filesystem: { read: [], write: [] }, network: false }),
    ...(limits && { limits }),
  };
  const refusal =
    own === undefined
      ? `${managed.where['require'] ?? 'sandbox.require'} requires a sandbox for this server; it runs with sandbox: auto`
      : undefined;
  return { server: { ...server, sandbox }, ...(refusal !== undefined && { refusal }) };
}

/** Whether `folder` is `limit` or inside it. */
export function within(folder: string, limit: string): boolean {
  const relative = path.relative(limit, folder);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}
