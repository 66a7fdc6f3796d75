/**
 * Policy rules as loaded from `policies/*.yaml`, and the decisions the engine makes with them.
 * The file format is `schema/policy.schema.json`; `policies/README.md` documents it for users.
 */

import type { FlowLabel, GuardrailSettings } from '../../config/types.js';
import type { Decision, Effect } from '../../core/pipeline/decision.js';
import type { PrincipalCondition } from './principal.js';

export type { Decision, Effect };

/** The four MCP tool annotations that are hints about behaviour (`title` is not one). */
export type HintName = 'readOnlyHint' | 'destructiveHint' | 'idempotentHint' | 'openWorldHint';

export const HINT_NAMES: readonly HintName[] = Object.freeze([
  'readOnlyHint',
  'destructiveHint',
  'idempotentHint',
  'openWorldHint',
]);

/** A place in a policy file; line and column are 1-based. */
export interface PolicySource {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/**
 * The result of checking a call's arguments against a rule's `arguments` schema. `unverifiable`:
 * the check could not be done safely (a string too long to run a pattern on); the engine then
 * denies the call rather than guess.
 */
export type ArgumentVerdict =
  /** `why`: what matched, for `policy explain`, when the condition says. */
  | { readonly kind: 'match'; readonly why?: string }
  | { readonly kind: 'mismatch'; readonly why: string }
  | { readonly kind: 'unverifiable'; readonly why: string };

/** A rule's `arguments` condition, compiled once when the file is loaded. */
export interface ArgumentCondition {
  /** The JSON Schema as written in the file. */
  readonly schema: Readonly<Record<string, unknown>>;
  /** Never throws. */
  readonly test: (args: Readonly<Record<string, unknown>>) => ArgumentVerdict;
  /**
   * `test`, except that a mismatch comes back without its text (`why` is empty): deciding a call
   * only asks whether the condition holds, and a rule that matches few calls (a deny for one
   * argument value) would otherwise write its text on every other call.
   */
  readonly holds: (args: Readonly<Record<string, unknown>>) => ArgumentVerdict;
}

/** A rule's `paths` as written, after the loader checked its shape. */
export interface PathConditionSpec {
  /** Folders as written: absolute, `~`, `~/…` or `file://` URIs. */
  readonly under: readonly string[];
  /** Also match a path that contains one of the folders: listing a parent walks into them. */
  readonly includingAncestors: boolean;
  /** Property names holding paths, matched at any depth; null: the heuristic picks them. */
  readonly pathArguments: readonly string[] | null;
  /**
   * Match only when the call names a path and every one, by every name it has, is in the
   * folders; for rules that grant something inside them. False: any one path is enough.
   */
  readonly every: boolean;
}

/** A rule's `paths` condition, compiled once when the file is loaded (paths.ts). */
export interface PathCondition {
  readonly spec: PathConditionSpec;
  /** Never throws; `unverifiable` when a path cannot be judged, which denies. */
  readonly test: (args: Readonly<Record<string, unknown>>) => ArgumentVerdict;
}

/**
 * The kinds of request a rule can be about. Host to upstream: a tool call, a prompt, a resource
 * (read, subscribe, unsubscribe), a completion. Upstream to host: sampling, elicitation, roots.
 * And a sign-in to a server, which the user makes through the host.
 */
export type RequestKind =
  | 'tool'
  | 'prompt'
  | 'resource'
  | 'completion'
  | 'sampling'
  | 'elicitation'
  | 'roots'
  // Signing in to a server that asks its user to (its authorize tool).
  | 'authorize';

export const REQUEST_KINDS: readonly RequestKind[] = Object.freeze([
  'tool',
  'prompt',
  'resource',
  'completion',
  'sampling',
  'elicitation',
  'roots',
  'authorize',
]);

/**
 * A rule's `match`; null for a condition that is not written (it holds for every request). A
 * rule that names no kind, tool, prompt or resource matches every kind of request.
 */
export interface PolicyMatch {
  /** Globs on the server's config name; any may match. */
  readonly server: readonly string[] | null;
  /** The kinds of request the rule is about; any may match. */
  readonly kind: readonly RequestKind[] | null;
  /** Globs on the upstream's own tool name; any may match. Only tool calls match. */
  readonly tool: readonly string[] | null;
  /** Globs on the upstream's own prompt name. Prompts, and completions for a prompt, match. */
  readonly prompt: readonly string[] | null;
  /**
   * Globs on the resource URI, normalised (see resourceUri.ts): resource reads and
   * (un)subscriptions, and completions for a resource, match.
   */
  readonly resource: readonly string[] | null;
  readonly trusted: boolean | null;
  /** Hints that must have these values, as read by `readAnnotations`. */
  readonly annotations: Readonly<Partial<Record<HintName, boolean>>> | null;
  readonly arguments: ArgumentCondition | null;
  /** Checked after `arguments`; see paths.ts. */
  readonly paths: PathCondition | null;
  /** Who the request is made for (see principal.ts); checked last. */
  readonly principal: PrincipalCondition | null;
  /**
   * Flow labels that must all have reached the host session through earlier results (`session:
   * { has: [...] }`); absent when the rule has no such condition. Known only for a call.
   */
  readonly session?: { readonly has: readonly FlowLabel[] };
}

/**
 * A `labels:` entry of a policy file: the tools, prompts and resources its match holds for carry
 * its labels. Every matching entry adds its labels (they are never taken away), unlike rules,
 * where the first match decides.
 */
export interface LabelRule {
  /** The `id` written in the file, else `<file basename>#labels<position in the list, from 1>`. */
  readonly id: string;
  /** A rule's match, without `session` (a label is about what is called, not what came before). */
  readonly match: PolicyMatch;
  readonly add: readonly FlowLabel[];
  readonly source: PolicySource;
}

/**
 * A `guardrails:` entry of a policy file: the results of the tools, prompts and resources its
 * match holds for are scanned with its settings. For each category the first matching entry that
 * says anything about it decides, before the config's settings.
 */
export interface GuardrailRule {
  /** The `id` written in the file, else `<file basename>#guardrails<position in the list, from 1>`. */
  readonly id: string;
  /** A rule's match, without `session`. */
  readonly match: PolicyMatch;
  readonly settings: GuardrailSettings;
  readonly source: PolicySource;
}

export interface PolicyRule {
  /** The `id` written in the file, else `<file basename>#<position in the file, from 1>`. */
  readonly id: string;
  /** False when `id` was made up because the file gives none. */
  readonly idWritten: boolean;
  readonly match: PolicyMatch;
  readonly action: Effect;
  /** As written; null when the file gives none. */
  readonly reason: string | null;
  /** Where the rule starts (its first key). */
  readonly source: PolicySource;
}

/** One parsed policy file. */
export interface PolicyFile {
  /** Absolute path. */
  readonly file: string;
  /** The file's `default`, with where it is written; null when the file states none. */
  readonly default: { readonly effect: Effect; readonly source: PolicySource } | null;
  readonly rules: readonly PolicyRule[];
  /** The file's `labels:` entries, in order; absent when it has none. */
  readonly labels?: readonly LabelRule[];
  /** The file's `guardrails:` entries, in order; absent when it has none. */
  readonly guardrails?: readonly GuardrailRule[];
  /** SHA-256 (hex) of the exact text parsed: which version of the file is in force. */
  readonly sha256: string;
}

/** Every policy file in force, in the order listed in the config (the first match wins). */
export interface PolicySet {
  readonly files: readonly PolicyFile[];
  /**
   * The files that come from the organisation's managed settings (absolute paths; they are
   * first in `files`), when the machine has them: decisions then say which layer decided.
   */
  readonly managedFiles?: readonly string[];
}
