/**
 * The `guardrails:` section and each server's `guardrails:` overrides. Kept apart from load.ts,
 * which calls `normalizeGuardrails` with its own reporting helper. Category names are checked
 * here, against the built-in ones and the user's patterns, so a misspelt one is an error with
 * its file and line rather than a setting that silently never applies.
 */
import { didYouMean } from '../lib/didYouMean.js';
import { compileGlob } from '../lib/glob.js';
import { BUILT_IN_CATEGORIES } from './guardrailCategories.js';
import type { KeyPath } from './interpolate.js';
import type { GuardrailAction, GuardrailSettings, GuardrailsConfig, ServerGuardrails } from './types.js';

type Data = Readonly<Record<string, unknown>>;

/** How load.ts lets this module report problems. */
export interface GuardrailsContext {
  add(keyPath: KeyPath, at: 'key' | 'value', message: string): void;
}

/** The section's defaults: secrets are hidden, personal data is recorded. */
export const GUARDRAIL_DEFAULTS = { secrets: 'redact', pii: 'audit' } as const satisfies Pick<
  GuardrailsConfig,
  'secrets' | 'pii'
>;

/**
 * The `guardrails:` section (undefined when the file has none), and how to read a server's
 * `guardrails:` entry against it.
 */
export function normalizeGuardrails(
  data: Data,
  ctx: GuardrailsContext,
): {
  readonly guardrails: GuardrailsConfig | undefined;
  readonly server: (entry: unknown, at: KeyPath) => ServerGuardrails | undefined;
} {
  const section = asRecord(data['guardrails']);
  const patterns = section === undefined ? [] : userPatterns(section['patterns'], ctx);
  // Every pattern's name, a pattern reported as broken included: its name is not reported again
  // wherever it is used.
  const named = Array.isArray(section?.['patterns'])
    ? (section['patterns'] as unknown[]).flatMap((p) => {
        const name = asRecord(p)?.['name'];
        return typeof name === 'string' ? [name] : [];
      })
    : [];
  const known = new Set([...BUILT_IN_CATEGORIES, ...named]);
  const settings = (value: Data, at: KeyPath): GuardrailSettings => levelSettings(value, at, known, ctx);
  const guardrails =
    section === undefined
      ? undefined
      : (() => {
          const level = settings(section, ['guardrails']);
          return {
            ...level,
            secrets: level.secrets ?? GUARDRAIL_DEFAULTS.secrets,
            pii: level.pii ?? GUARDRAIL_DEFAULTS.pii,
            patterns,
          };
        })();
  return {
    guardrails,
    server(entry, at) {
      const written = asRecord(entry);
      if (written === undefined) return undefined;
      const tools = Object.entries(asRecord(written['tools']) ?? {}).flatMap(([glob, value]) => {
        const level = asRecord(value);
        if (level === undefined) return [];
        try {
          compileGlob(glob);
        } catch (error) {
          ctx.add([...at, 'tools', glob], 'key', error instanceof Error ? error.message : String(error));
          return [];
        }
        return [{ glob, settings: settings(level, [...at, 'tools', glob]) }];
      });
      return { ...settings(written, at), tools };
    },
  };
}

/**
 * One level's `secrets`, `pii` and `categories`, each category name checked against `known`
 * (`named` says what the known names are, for the error).
 */
export function levelSettings(
  level: Data,
  at: KeyPath,
  known: ReadonlySet<string>,
  ctx: GuardrailsContext,
  named = 'the built-in ones (see docs/guides/result-guardrails.md) and the names of guardrails.patterns',
): GuardrailSettings {
  const secrets = action(level['secrets']);
  const pii = action(level['pii']);
  const categories: Record<string, GuardrailAction> = {};
  for (const [name, value] of Object.entries(asRecord(level['categories']) ?? {})) {
    if (!known.has(name)) {
      const near = didYouMean(name, known);
      ctx.add(
        [...at, 'categories', name],
        'key',
        `unknown guardrail category "${name}"${near === undefined ? '' : ` (did you mean "${near}"?)`}; categories are ${named}`,
      );
      continue;
    }
    const chosen = action(value);
    if (chosen !== undefined) categories[name] = chosen;
  }
  return {
    ...(secrets === undefined ? {} : { secrets }),
    ...(pii === undefined ? {} : { pii }),
    categories,
  };
}

/** The user's patterns, each compiled once here to report one that does not compile. */
function userPatterns(value: unknown, ctx: GuardrailsContext): GuardrailsConfig['patterns'] {
  if (!Array.isArray(value)) return [];
  const seen = new Set<string>();
  return value.flatMap((item: unknown, index) => {
    const entry = asRecord(item);
    const name = entry?.['name'];
    const written = entry?.['regex'];
    if (typeof name !== 'string' || typeof written !== 'string') return [];
    const at: KeyPath = ['guardrails', 'patterns', index];
    if (BUILT_IN_CATEGORIES.includes(name) || seen.has(name)) {
      ctx.add(
        [...at, 'name'],
        'value',
        `"${name}" is already a category; give the pattern a name of its own`,
      );
      return [];
    }
    seen.add(name);
    const literal = /^\/(.+)\/([a-z]*)$/s.exec(written);
    const regex = literal?.[1] ?? written;
    const flags = literal?.[2] ?? '';
    if (/[^imsu]/.test(flags)) {
      ctx.add([...at, 'regex'], 'value', `regular expression flags may be i, m, s and u, got "${flags}"`);
      return [];
    }
    try {
      new RegExp(regex, flags);
    } catch (error) {
      const reason = error instanceof Error ? error.message.replace(/^Invalid regular expression: /, '') : '';
      ctx.add([...at, 'regex'], 'value', `not a valid JavaScript regular expression: ${reason}`);
      return [];
    }
    return [{ name, regex, flags }];
  });
}

function action(value: unknown): GuardrailAction | undefined {
  return value === 'redact' || value === 'block' || value === 'audit' || value === 'off' ? value : undefined;
}

function asRecord(value: unknown): Data | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Data) : undefined;
}
