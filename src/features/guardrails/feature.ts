import { groupOf } from '../../config/guardrailCategories.js';
import type {
  GuardrailAction,
  GuardrailSettings,
  GuardrailsConfig,
  ServerConfig,
  WardenConfig,
} from '../../config/types.js';
import type { Logger } from '../../core/logger.js';
import type { Feature } from '../../core/routing/feature.js';
import { compileGlob } from '../../lib/glob.js';
import { createDetector } from './detector.js';
import { createGuardrailsStage, type GuardrailsStageOptions } from './stage.js';

/**
 * Result guardrails: secrets and personal data in what servers return are redacted, blocked or
 * recorded before the host sees them, per category, server and tool. Absent from a config
 * without a `guardrails:` section.
 */
export function createGuardrails(
  config: WardenConfig,
  deps: { readonly logger: Logger; readonly record: GuardrailsStageOptions['record'] },
): Feature[] {
  const section = config.guardrails;
  if (section === undefined) return [];
  const detector = createDetector({
    patterns: section.patterns.map((p) => ({ name: p.name, regex: new RegExp(p.regex, `${p.flags}g`) })),
  });
  const servers = new Map(config.servers.map((s) => [s.name, serverActions(section, s)]));
  return [
    {
      stage: {
        name: 'guardrails',
        run: createGuardrailsStage({
          detector,
          actionsFor: (server, target) => (servers.get(server) ?? gatewayOnly(section))(target),
          record: deps.record,
          logger: deps.logger,
        }),
      },
    },
  ];
}

type ActionsFor = (target: string) => (category: string) => GuardrailAction;

/** How one server's results are decided: its tool globs, then its own settings, then the section's. */
function serverActions(section: GuardrailsConfig, server: ServerConfig): ActionsFor {
  const own = server.guardrails;
  if (own === undefined) return gatewayOnly(section);
  const tools = own.tools.map(({ glob, settings }) => ({
    glob: compileGlob(glob),
    decide: resolver([settings, own, section]),
  }));
  const withoutTool = resolver([own, section]);
  return (target) => tools.find(({ glob }) => glob.test(target))?.decide ?? withoutTool;
}

function gatewayOnly(section: GuardrailsConfig): ActionsFor {
  const decide = resolver([section]);
  return () => decide;
}

/**
 * The action for a category, from the most specific level that says anything about it: at each
 * level its own category setting, else its group's (`secrets` or `pii`). The section always has
 * both groups, so every category gets an action.
 */
function resolver(levels: readonly GuardrailSettings[]): (category: string) => GuardrailAction {
  const decided = new Map<string, GuardrailAction>();
  return (category) => {
    let action = decided.get(category);
    if (action === undefined) {
      const group = groupOf(category);
      for (const level of levels) {
        action = level.categories[category] ?? level[group];
        if (action !== undefined) break;
      }
      action ??= 'off';
      decided.set(category, action);
    }
    return action;
  };
}
