import { groupOf } from '../../config/guardrailCategories.js';
import type {
  GuardrailAction,
  GuardrailSettings,
  GuardrailsConfig,
  ServerConfig,
  WardenConfig,
} from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import type { RoutedMessage } from '../../core/pipeline/types.js';
import type { Feature } from '../../core/routing/feature.js';
import { compileGlob } from '../../lib/glob.js';
import { createDetector } from './detector.js';
import { createGuardrailsStage, type GuardrailsStageOptions } from './stage.js';

/** One level of guardrail settings, and where it is written (for `policy explain`). */
export interface GuardrailLevel {
  readonly settings: GuardrailSettings;
  /** `policy entry "crm-pii" (crm.yaml:4)`, `servers.crm.guardrails`, ... */
  readonly from: string;
}

export interface GuardrailsDeps {
  readonly logger: Logger;
  readonly record: GuardrailsStageOptions['record'];
  /**
   * The policy files' levels for a message's result, most specific first (the managed files'
   * entries before the user's), read on every call so that an edit of a policy applies from the
   * next one. Absent: policies say nothing about guardrails.
   */
  readonly policyLevels?: (message: RoutedMessage) => readonly GuardrailLevel[];
}

/**
 * Result guardrails: secrets and personal data in what servers return are redacted, blocked or
 * recorded before the host sees them, per category, by the policy files' `guardrails:` entries
 * and then the config's settings (tool glob, server, section). Absent when neither can say
 * anything: a config without a `guardrails:` section, and no policy to ask.
 */
export function createGuardrails(config: WardenConfig, deps: GuardrailsDeps): Feature[] {
  const section = config.guardrails;
  const { policyLevels } = deps;
  if (section === undefined && policyLevels === undefined) return [];
  const detector = createDetector({
    patterns: (section?.patterns ?? []).map((p) => ({
      name: p.name,
      regex: new RegExp(p.regex, `${p.flags}g`),
    })),
  });
  const servers = new Map(config.servers.map((s) => [s.name, s]));
  // The config's answer per server and tool, made once: most results are decided by it alone.
  const fromConfig = new Map<string, ActionsFor>();
  const configActions = (server: string): ActionsFor => {
    let actions = fromConfig.get(server);
    if (actions === undefined) {
      actions = serverActions(section, servers.get(server));
      fromConfig.set(server, actions);
    }
    return actions;
  };
  return [
    {
      stage: {
        name: 'guardrails',
        run: createGuardrailsStage({
          detector,
          actionsFor(message) {
            const byPolicy = policyLevels?.(message) ?? NONE;
            if (byPolicy.length === 0)
              return section === undefined ? undefined : configActions(message.server)(toolOf(message));
            const levels = [
              ...byPolicy,
              ...configLevels(section, servers.get(message.server), toolOf(message)),
            ];
            return resolver(levels.map((level) => level.settings));
          },
          record: deps.record,
          logger: deps.logger,
        }),
      },
    },
  ];
}

const NONE: readonly GuardrailLevel[] = Object.freeze([]);

type ActionsFor = (tool: string | undefined) => (category: string) => GuardrailAction;

/** The tool a result is of, for the config's tool globs: none for a resource or a prompt. */
function toolOf(message: Pick<RoutedMessage, 'kind' | 'target'>): string | undefined {
  return message.kind === 'tools/call' || message.kind === 'tasks/result' ? message.target : undefined;
}

/** How one server's results are decided by the config: its tool globs, its own settings, the section's. */
function serverActions(section: GuardrailsConfig | undefined, server: ServerConfig | undefined): ActionsFor {
  const own = server?.guardrails;
  const tools = (own?.tools ?? []).map(({ glob, settings }) => ({
    glob: compileGlob(glob),
    decide: resolver(own === undefined ? [settings] : [settings, own, ...(section ? [section] : [])]),
  }));
  const withoutTool = resolver(configLevels(section, server, undefined).map((level) => level.settings));
  return (tool) =>
    (tool === undefined ? undefined : tools.find(({ glob }) => glob.test(tool))?.decide) ?? withoutTool;
}

/**
 * The config's levels for a result of `server`'s `tool` (undefined for a resource or a prompt),
 * most specific first: the first of the server's tool globs that matches, the server's own
 * settings, the `guardrails:` section.
 */
export function configLevels(
  section: GuardrailsConfig | undefined,
  server: ServerConfig | undefined,
  tool: string | undefined,
): GuardrailLevel[] {
  const levels: GuardrailLevel[] = [];
  const own = server?.guardrails;
  if (own !== undefined && server !== undefined) {
    const glob = tool === undefined ? undefined : own.tools.find((t) => compileGlob(t.glob).test(tool));
    if (glob !== undefined)
      levels.push({
        settings: glob.settings,
        from: `servers.${server.name}.guardrails.tools["${glob.glob}"]`,
      });
    levels.push({ settings: own, from: `servers.${server.name}.guardrails` });
  }
  if (section !== undefined) levels.push({ settings: section, from: 'guardrails' });
  return levels;
}

/**
 * The action for a category, and the level that decided it: the first level that says anything
 * about it, at each level its own category setting, else its group's (`secrets` or `pii`). No
 * level saying anything: `off` (results are not scanned for it).
 */
export function decideCategory(
  levels: readonly GuardrailLevel[],
  category: string,
): { readonly action: GuardrailAction; readonly from: string | undefined } {
  const group = groupOf(category);
  for (const level of levels) {
    const action = level.settings.categories[category] ?? level.settings[group];
    if (action !== undefined) return { action, from: level.from };
  }
  return { action: 'off', from: undefined };
}

/** `decideCategory` for a fixed list of levels, remembered per category. */
function resolver(levels: readonly GuardrailSettings[]): (category: string) => GuardrailAction {
  const decided = new Map<string, GuardrailAction>();
  const named = levels.map((settings) => ({ settings, from: '' }));
  return (category) => {
    let action = decided.get(category);
    if (action === undefined) {
      action = decideCategory(named, category).action;
      decided.set(category, action);
    }
    return action;
  };
}

/** What `policy explain` says guardrails do with a tool's result: per group, then the exceptions. */
export interface GuardrailsSummary {
  /** Per group, the action a category nobody names gets, and the level that says so. */
  readonly groups: readonly {
    readonly group: 'secrets' | 'pii';
    readonly action: GuardrailAction;
    readonly from: string | undefined;
  }[];
  /** The categories some level names whose action or deciding level is not their group's. */
  readonly categories: readonly {
    readonly category: string;
    readonly action: GuardrailAction;
    readonly from: string | undefined;
  }[];
}

export function summarizeGuardrails(levels: readonly GuardrailLevel[]): GuardrailsSummary {
  const groups = (['secrets', 'pii'] as const).map((group) => {
    const level = levels.find((l) => l.settings[group] !== undefined);
    return { group, action: level?.settings[group] ?? ('off' as const), from: level?.from };
  });
  const named = [...new Set(levels.flatMap((l) => Object.keys(l.settings.categories)))].sort();
  const categories = named.flatMap((category) => {
    const decided = decideCategory(levels, category);
    const group = groups.find((g) => g.group === groupOf(category))!;
    return decided.action === group.action && decided.from === group.from ? [] : [{ category, ...decided }];
  });
  return { groups, categories };
}
