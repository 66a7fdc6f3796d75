/**
 * Finds secrets and personal data in a text: secretlint's recommended preset (a maintained,
 * versioned rule set, pinned as a dependency) plus mcp-warden's own detectors and the user's
 * patterns. The preset is loaded on first use, so a gateway without guardrails never loads it.
 */
import { secretlintCategory } from '../../config/guardrailCategories.js';
import { ownFindings, type Finding, type UserPattern } from './ownDetectors.js';

export type { Finding, UserPattern } from './ownDetectors.js';

/** Finds what every rule finds in a text; findings may overlap. */
export interface Detector {
  detect(text: string): Promise<Finding[]>;
}

/**
 * The preset's comment directive rule is left out: it lets the text itself switch rules off
 * (`secretlint-disable`), and here the text is an upstream's result, which must not be able to
 * hide a secret that way.
 */
const LEFT_OUT = new Set(['@secretlint/secretlint-rule-filter-comments']);

/** The options given to single rules of the preset, by rule id. */
const RULE_OPTIONS: Readonly<Record<string, object>> = {
  // Access key ids are off in the preset by default (a repository holds many harmless ones);
  // one in a tool's result is worth hiding from the model all the same.
  '@secretlint/secretlint-rule-aws': { enableIDScanRule: true },
};

type Lint = (
  text: string,
) => Promise<readonly { ruleId: string; messageId: string; range: readonly [number, number] }[]>;

let preset: Promise<Lint> | undefined;

/** secretlint's core and the preset, loaded once per process and shared by every detector. */
function loadPreset(): Promise<Lint> {
  return (preset ??= (async () => {
    const [{ lintSource }, { rules }, { secretLintProfiler }] = await Promise.all([
      import('@secretlint/core'),
      import('@secretlint/secretlint-rule-preset-recommend'),
      import('@secretlint/profiler'),
    ]);
    // The profiler is on unless switched off: it marks the performance timeline twice per rule
    // per scan and keeps every entry, which in a gateway that scans every result for days is
    // memory without bound and a cost on every call.
    secretLintProfiler.setEnabled(false);
    const config = {
      rules: rules
        .filter((rule) => !LEFT_OUT.has(rule.meta.id))
        .map((rule) => ({ id: rule.meta.id, rule, options: RULE_OPTIONS[rule.meta.id] ?? {} })),
    };
    return async (text: string) => {
      // Some rules read a file as a whole only when it is JSON (a cloud service account key file):
      // a result that is one JSON object is offered to them as such.
      const json = text.startsWith('{') && text.trimEnd().endsWith('}');
      const ext = json ? '.json' : '.txt';
      const result = await lintSource({
        source: { content: text, filePath: `result${ext}`, ext, contentType: 'text' },
        options: { config, maskSecrets: true, noPhysicFilePath: true },
      });
      return result.messages.flatMap((m) => (m.type === 'message' ? [m] : []));
    };
  })());
}

/** A detector with the user's own patterns besides the built-in rules. */
export function createDetector(options: { readonly patterns: readonly UserPattern[] }): Detector {
  return {
    async detect(text) {
      const lint = await loadPreset();
      const found = ownFindings(text, options.patterns);
      for (const message of await lint(text)) {
        const [start, end] = message.range;
        if (end > start)
          found.push({ category: secretlintCategory(message.ruleId, message.messageId), start, end });
      }
      return found;
    },
  };
}
