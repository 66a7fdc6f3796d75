/**
 * The catalogue sections of the config: `catalog:` (how the tool list is served) and
 * `profiles:` (per-client subsets). Kept apart from load.ts, which calls `normalizeCatalog`
 * with its own reporting helper. The JSON schema has checked shapes and types already; what is
 * checked here is what it cannot see, such as a profile naming no configured server.
 */
import { matchesGlob } from '../lib/glob.js';
import type { KeyPath } from './interpolate.js';
import type { CatalogConfig, CatalogMode, ProfileConfig } from './types.js';

type Data = Readonly<Record<string, unknown>>;

/** How load.ts lets this module report problems. */
export interface CatalogContext {
  add(keyPath: KeyPath, at: 'key' | 'value', message: string): void;
}

export const CATALOG_DEFAULTS: CatalogConfig = Object.freeze({
  mode: 'auto',
  alwaysLoad: [],
  // Around 60 tools or 20k tokens is where hosts' tool choice is reported to degrade and the
  // listing becomes a noticeable share of the context window.
  auto: Object.freeze({ maxTools: 60, maxTokens: 20_000 }),
  hostServerName: 'mcp-warden',
});

const MODES: readonly CatalogMode[] = ['all', 'search', 'auto'];

const record = (value: unknown): Data | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Data) : undefined;
const strings = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string' && v !== '') : [];
const modeOf = (value: unknown): CatalogMode | undefined =>
  MODES.includes(value as CatalogMode) ? (value as CatalogMode) : undefined;
const positive = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isInteger(value) && value >= 1 ? value : undefined;

/** `catalog:` and `profiles:`, normalized; problems go to `ctx`. `servers`: every configured server's name. */
export function normalizeCatalog(
  data: Data,
  servers: readonly string[],
  ctx: CatalogContext,
): { readonly catalog: CatalogConfig; readonly profiles: readonly ProfileConfig[] } {
  const section = record(data['catalog']) ?? {};
  const auto = record(section['auto']) ?? {};
  const hostServerName = section['hostServerName'];
  const catalog: CatalogConfig = {
    mode: modeOf(section['mode']) ?? CATALOG_DEFAULTS.mode,
    alwaysLoad: strings(section['alwaysLoad']),
    auto: {
      maxTools: positive(auto['maxTools']) ?? CATALOG_DEFAULTS.auto.maxTools,
      maxTokens: positive(auto['maxTokens']) ?? CATALOG_DEFAULTS.auto.maxTokens,
    },
    hostServerName:
      typeof hostServerName === 'string' && hostServerName !== ''
        ? hostServerName
        : CATALOG_DEFAULTS.hostServerName,
  };
  // A budget that leaves no room for a tool name is a mistake worth saying at once.
  if (catalog.hostServerName.length > 40)
    ctx.add(
      ['catalog', 'hostServerName'],
      'value',
      `"${catalog.hostServerName}" is ${catalog.hostServerName.length} characters: Claude Code's tool names (mcp__<it>__<tool>) are at most 64, which would leave ${Math.max(0, 57 - catalog.hostServerName.length)} for the tool; use a shorter name in the host's config and here`,
    );
  const profiles: ProfileConfig[] = [];
  for (const [name, value] of Object.entries(record(data['profiles']) ?? {})) {
    const entry = record(value);
    if (entry === undefined) continue;
    const profile: ProfileConfig = {
      name,
      clients: strings(entry['clients']),
      principals: strings(entry['principals']),
      servers: strings(entry['servers']),
      tools: strings(entry['tools']),
      prompts: strings(entry['prompts']),
      resources: strings(entry['resources']),
      ...(modeOf(entry['mode']) !== undefined && { mode: modeOf(entry['mode'])! }),
    };
    profile.servers.forEach((glob, i) => {
      if (!servers.some((server) => matchesGlob(glob, server)))
        ctx.add(
          ['profiles', name, 'servers', i],
          'value',
          `profile "${name}": "${glob}" matches no configured server (servers: ${servers.join(', ') || 'none'})`,
        );
    });
    profiles.push(profile);
  }
  return { catalog, profiles };
}
