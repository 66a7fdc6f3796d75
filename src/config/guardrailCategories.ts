/**
 * The names of what result guardrails find. Config and policy name these, audit records carry
 * them, and redaction markers show them, so they are written once here, without loading the
 * rule set itself (config is checked before any rule is loaded).
 */

/** Whether a category is a credential (`secrets`) or personal data (`pii`). */
export type CategoryGroup = 'secrets' | 'pii';

/**
 * The category of each rule of secretlint's recommended preset, by the rule's short name (its
 * package name without `@secretlint/secretlint-rule-`), and, for rules that report several kinds
 * of thing, by message id. A rule a newer preset adds and this table lacks is still enforced,
 * under its short name, as a secret.
 */
export const SECRETLINT_CATEGORIES: Readonly<Record<string, string>> = {
  'aws:AWSAccessKeyID': 'aws-access-key',
  'aws:AWSSecretAccessKey': 'aws-secret-key',
  'aws:AWSAccountID': 'aws-account-id',
  gcp: 'gcp-service-account-key',
  privatekey: 'private-key',
  npm: 'npm-token',
  basicauth: 'basic-auth',
  slack: 'slack-token',
  sendgrid: 'sendgrid-key',
  shopify: 'shopify-token',
  stripe: 'stripe-key',
  github: 'github-token',
  gitlab: 'gitlab-token',
  grafana: 'grafana-token',
  openai: 'openai-key',
  anthropic: 'anthropic-key',
  groq: 'groq-key',
  huggingface: 'huggingface-token',
  linear: 'linear-key',
  notion: 'notion-token',
  '1password': '1password-token',
  'database-connection-string': 'database-connection-string',
  'hashicorp-vault': 'hashicorp-vault-token',
  vercel: 'vercel-token',
  databricks: 'databricks-token',
  docker: 'docker-credentials',
  figma: 'figma-token',
  cloudflare: 'cloudflare-token',
  tailscale: 'tailscale-key',
};

/** Secrets the preset has no rule for, found by mcp-warden's own detectors (detectors.ts). */
export const OWN_SECRET_CATEGORIES = ['google-api-key', 'jwt'] as const;

/** Personal data, found by mcp-warden's own detectors, each checked beyond its shape. */
export const PII_CATEGORIES = ['email', 'phone', 'card-number', 'iban'] as const;

/** Every built-in category a config or policy may name. */
export const BUILT_IN_CATEGORIES: readonly string[] = [
  ...new Set(Object.values(SECRETLINT_CATEGORIES)),
  ...OWN_SECRET_CATEGORIES,
  ...PII_CATEGORIES,
];

const PII = new Set<string>(PII_CATEGORIES);

/** The group whose setting applies to a category that has none of its own. */
export function groupOf(category: string): CategoryGroup {
  return PII.has(category) ? 'pii' : 'secrets';
}

/** The category a secretlint message stands for. */
export function secretlintCategory(ruleId: string, messageId: string): string {
  const short = ruleId.replace(/^@secretlint\/secretlint-rule-/, '');
  return SECRETLINT_CATEGORIES[`${short}:${messageId}`] ?? SECRETLINT_CATEGORIES[short] ?? short;
}
