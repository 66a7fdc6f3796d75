import path from 'node:path';

/**
 * A decision about one routed message, as a value: what a policy (or any stage that judges)
 * decided, which rule decided it and why. Core knows its shape so that every stage can read it
 * without knowing the feature that made it.
 */

/** What a rule (or the default) does with a message. */
export type Effect = 'allow' | 'deny' | 'confirm';

export interface Decision {
  readonly effect: Effect;
  /** The deciding rule's id; null when the default decided. */
  readonly ruleId: string | null;
  /** A sentence for the model and the user: the rule's `reason`, or one made up naming the rule or default. */
  readonly reason: string;
  /** The deciding rule, or the `default` key that decided; null when no file states a default. */
  readonly source: { readonly file: string; readonly line: number } | null;
  /**
   * Which layer's policy decided, when the organisation's managed settings are in force:
   * `managed` for their policy files, `user` for the user's (and for no rule at all).
   */
  readonly layer?: 'managed' | 'user';
  /**
   * Who decided, when it was not a policy rule or default: a setting of the config, such as
   * `flow.trifecta in proxy.config.yaml`.
   */
  readonly by?: string;
}

/** Where a decision came from, for the model and the user: `policy rule "no-deletes", org.yaml`. */
export function describeDecision(decision: Decision): string {
  if (decision.by !== undefined) return decision.by;
  const file = decision.source === null ? '' : `, ${path.basename(decision.source.file)}`;
  return decision.ruleId === null ? `policy default${file}` : `policy rule "${decision.ruleId}"${file}`;
}
