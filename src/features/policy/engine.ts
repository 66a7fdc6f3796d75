/**
 * Decides allow / deny / confirm for a request (a tool call, a prompt, a resource, a completion,
 * or a request a server makes of the host) from a `PolicySet`.
 *
 * Rules of all files form one list in the order the files are listed: the first rule whose
 * `match` holds decides. When none does, the default of the first file that states one decides;
 * with none stated (or no policy files at all), the call is allowed. Deterministic and pure:
 * the same set and input always give the same decision, so `tools/list` filtering, `tools/call`
 * and `mcp-warden policy explain` all agree.
 *
 * Longer than most modules because deciding, explaining and hiding from lists must apply the same
 * conditions in the same order; they share one `evaluate`.
 */
import path from 'node:path';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { matchesGlob } from '../../lib/glob.js';
import { FLOW_LABELS, type FlowLabel } from '../../config/types.js';
import type { Principal } from '../../core/principal.js';
import { readAnnotations, type AnnotationReading, type HintOrigin } from './annotations.js';
import {
  HINT_NAMES,
  type ArgumentVerdict,
  type Decision,
  type Effect,
  type GuardrailRule,
  type LabelRule,
  type PolicyRule,
  type PolicySet,
  type PolicySource,
  type RequestKind,
} from './types.js';

/** A tool as the engine sees it, without a call's arguments. */
export interface PolicyToolInput {
  readonly kind?: 'tool';
  /** The upstream's name in the config (`servers.<name>`), not its namespace. */
  readonly server: string;
  /** The upstream's own tool name, not the exposed (namespaced) one. */
  readonly tool: string;
  /** As the upstream lists them; read through `readAnnotations`. */
  readonly annotations: ToolAnnotations | undefined;
  /** The server's `trusted` setting in the config. */
  readonly trusted: boolean;
}

/** Any other kind of request, without its arguments. */
export interface PolicyOtherInput {
  readonly kind: Exclude<RequestKind, 'tool'>;
  readonly server: string;
  readonly trusted: boolean;
  /** The upstream's own prompt name, for a prompt or a completion of a prompt's argument. */
  readonly prompt?: string;
  /**
   * The resource URI, normalised (resourceUri.ts), for a resource request or a completion of a
   * resource's argument. Undefined for "any resource of the server" (a template in a list).
   */
  readonly resource?: string;
}

/**
 * What a request is about, without its arguments: enough to decide what a list shows. `principal`
 * is who makes it (absent in what a list shows, which every principal shares).
 */
export type PolicySubject = (PolicyToolInput | PolicyOtherInput) & { readonly principal?: Principal };

/** One request: what it is about, and the arguments exactly as the other side will receive them. */
export type PolicyCallInput = PolicySubject & {
  /** Missing arguments are checked as `{}`. */
  readonly arguments: Readonly<Record<string, unknown>> | undefined;
  /** The flow labels that reached the host session through earlier results; absent: none. */
  readonly session?: ReadonlySet<FlowLabel>;
};

/** How one rule fared for one call. */
export interface TraceEntry {
  readonly ruleId: string;
  readonly source: { readonly file: string; readonly line: number };
  /** True for the rule that decided (also when it decided to deny because it could not check). */
  readonly matched: boolean;
  /** The first condition that failed, or every condition that held. */
  readonly why: string;
}

export interface Explanation {
  readonly decision: Decision;
  /** The rules tried, in order, up to and including the one that decided. */
  readonly trace: readonly TraceEntry[];
}

export interface PolicyEngine {
  /** The decision for one call. Never throws. */
  decide(input: PolicyCallInput): Decision;
  /**
   * True when every possible request about this tool, prompt or resource is denied, so the
   * host's list should not show it: a rule without an `arguments` condition denies it, and no
   * earlier rule that could match it allows or confirms some of its requests; or no rule can
   * match it and the default is deny. A rule with an `arguments` condition never hides anything
   * by itself, and neither does a `resource` glob when the subject is a whole template.
   */
  isHiddenFromList(input: PolicySubject): boolean;
  /** `decide`, with the reasoning for `mcp-warden policy explain`. */
  explain(input: PolicyCallInput): Explanation;
  /** The rules whose conditions other than `arguments` hold for this subject, in order. */
  candidates(input: PolicySubject): readonly PolicyRule[];
  /**
   * The flow labels the `labels:` entries give this request (every entry that matches adds its
   * own), with the entries that gave them; empty when none matches. An entry whose arguments
   * cannot be checked counts as matching: a label only makes the gateway more careful.
   */
  labelsOf(input: PolicyCallInput): LabelsFound;
  /** Whether any file has a `labels:` entry: without one, `labelsOf` finds none, whatever it is asked. */
  readonly labelled: boolean;
  /**
   * The `guardrails:` entries whose match holds for this request, in order (the managed files'
   * first), each with the layer it comes from when managed settings are in force. An entry whose
   * arguments cannot be checked does not match: its settings could loosen what the config says
   * as well as tighten it, and a guess either way would be wrong for one of them.
   */
  guardrailsOf(input: PolicyCallInput): readonly GuardrailsFound[];
  /** Whether any file has a `guardrails:` entry: without one, `guardrailsOf` finds none. */
  readonly guarded: boolean;
  /** Whether any rule has a `session` condition: without one, no decision depends on the session. */
  readonly asksSession: boolean;
}

/** The labels the policy files give a request, and which entries gave them. */
export interface LabelsFound {
  readonly labels: readonly FlowLabel[];
  readonly entries: readonly string[];
}

/** A `guardrails:` entry that holds for a request. */
export interface GuardrailsFound {
  readonly rule: GuardrailRule;
  /** Present when managed settings are in force: which layer the entry comes from. */
  readonly layer?: 'managed' | 'user';
}

const NO_LABELS: LabelsFound = Object.freeze({ labels: Object.freeze([]), entries: Object.freeze([]) });

type Outcome =
  | { readonly kind: 'match'; readonly why: string }
  | { readonly kind: 'mismatch'; readonly why: string }
  /** The conditions other than arguments hold; the arguments could not be checked. */
  | { readonly kind: 'unverifiable'; readonly why: string };

interface DefaultRule {
  readonly effect: Effect;
  readonly file: string;
  readonly source: PolicySource;
}

/** What an engine decides from, fixed when it is built, and its per-tool memory. */
interface EngineState {
  readonly rules: readonly PolicyRule[];
  /** The managed policy files, when managed settings are in force: decisions then name their layer. */
  readonly managed: ReadonlySet<string> | undefined;
  /** Decisions are values shared by every call they decide: made once, frozen. */
  readonly decisions: ReadonlyMap<PolicyRule, Decision>;
  readonly defaultDecision: Decision;
  /**
   * Per tool, the rules whose conditions other than `arguments` hold, in order. Those depend
   * only on the server, the tool, its trust and its annotations, which change rarely (a list
   * refresh, a reload makes a new engine), so a call only tests argument schemas and builds
   * no explanation text. Bounded: a gateway exposes thousands of tools, not millions.
   * By server, then tool: a joined string key would be made (and hashed) on every call.
   */
  readonly candidates: Map<string, Map<string, Candidates>>;
  remembered: number;
}

/** Builds an engine over a loaded set. The set is not copied: it is frozen by the loader. */
export function createPolicyEngine(set: PolicySet): PolicyEngine {
  const rules: readonly PolicyRule[] = set.files.flatMap((file) => file.rules);
  const labelRules: readonly LabelRule[] = set.files.flatMap((file) => file.labels ?? []);
  const guardrailRules: readonly GuardrailRule[] = set.files.flatMap((file) => file.guardrails ?? []);
  const managed = set.managedFiles === undefined ? undefined : new Set(set.managedFiles);
  let fallback: DefaultRule | null = null;
  for (const file of set.files) {
    if (file.default === null) continue;
    fallback = { effect: file.default.effect, file: file.file, source: file.default.source };
    break;
  }
  const state: EngineState = {
    rules,
    managed,
    decisions: new Map(
      rules.map((rule) => [
        rule,
        Object.freeze({ ...ruleDecision(rule), ...layerOf(managed, rule.source.file) }),
      ]),
    ),
    defaultDecision: Object.freeze({
      ...makeDefaultDecision(set.files.length, fallback),
      ...layerOf(managed, fallback?.file),
    }),
    candidates: new Map(),
    remembered: 0,
  };
  return {
    decide: (input) => decide(state, input),
    isHiddenFromList: (input) => isHiddenFromList(state, input),
    candidates: (input) => {
      const reader = annotationReader(input);
      return rules.filter(
        (rule) => evaluate(rule, input, { reader, args: null, explain: false }).kind !== 'mismatch',
      );
    },
    labelsOf: (input) => (labelRules.length === 0 ? NO_LABELS : labelsOf(labelRules, input)),
    labelled: labelRules.length > 0,
    guardrailsOf: (input) =>
      guardrailRules.length === 0 ? [] : guardrailsOf(guardrailRules, managed, input),
    guarded: guardrailRules.length > 0,
    asksSession: rules.some((rule) => rule.match.session !== undefined),
    explain(input) {
      const trace: TraceEntry[] = [];
      const decision = run(state, input, trace);
      return { decision, trace };
    },
  };
}

function labelsOf(labelRules: readonly LabelRule[], input: PolicyCallInput): LabelsFound {
  const context = { reader: annotationReader(input), args: input.arguments ?? {}, explain: false };
  const labels = new Set<FlowLabel>();
  const entries: string[] = [];
  for (const rule of labelRules) {
    if (evaluate(rule, input, context).kind === 'mismatch') continue;
    entries.push(rule.id);
    for (const label of rule.add) labels.add(label);
  }
  return entries.length === 0 ? NO_LABELS : { labels: FLOW_LABELS.filter((l) => labels.has(l)), entries };
}

/** Where a `guardrails:` entry is written, for `policy explain` and logs: `policy entry "x" (f.yaml:4, managed layer)`. */
export function describeGuardrailEntry(found: GuardrailsFound): string {
  const { rule, layer } = found;
  return `policy entry "${rule.id}" (${path.basename(rule.source.file)}:${rule.source.line}${layer === undefined ? '' : `, ${layer} layer`})`;
}

function guardrailsOf(
  rules: readonly GuardrailRule[],
  managed: ReadonlySet<string> | undefined,
  input: PolicyCallInput,
): GuardrailsFound[] {
  const context = { reader: annotationReader(input), args: input.arguments ?? {}, explain: false };
  return rules
    .filter((rule) => evaluate(rule, input, context).kind === 'match')
    .map((rule) => ({ rule, ...layerOf(managed, rule.source.file) }));
}

/** Which layer a decision comes from, when managed settings are in force (nothing otherwise). */
function layerOf(
  managed: ReadonlySet<string> | undefined,
  file: string | undefined,
): Pick<Decision, 'layer'> {
  return managed === undefined ? {} : { layer: file !== undefined && managed.has(file) ? 'managed' : 'user' };
}

/** Every rule in order, explained: for requests other than tool calls, and for `explain`. */
function run(state: EngineState, input: PolicyCallInput, trace: TraceEntry[] | null): Decision {
  const args = input.arguments ?? {};
  const reader = annotationReader(input);
  for (const rule of state.rules) {
    const outcome = evaluate(rule, input, { reader, args, explain: true });
    if (outcome.kind === 'mismatch') {
      trace?.push({ ruleId: rule.id, source: lineOf(rule.source), matched: false, why: outcome.why });
      continue;
    }
    const why =
      outcome.kind === 'match'
        ? outcome.why
        : `the arguments could not be checked (${outcome.why}); denied, since whether the rule applies is unknown`;
    trace?.push({ ruleId: rule.id, source: lineOf(rule.source), matched: true, why });
    return outcome.kind === 'match'
      ? (state.decisions.get(rule) ?? ruleDecision(rule))
      : { ...uncheckedDecision(rule, outcome.why), ...layerOf(state.managed, rule.source.file) };
  }
  return state.defaultDecision;
}

function isHiddenFromList(state: EngineState, input: PolicySubject): boolean {
  // One context for every rule: listing asks this of each of thousands of tools.
  const context = { reader: annotationReader(input), args: null, explain: false };
  const template = input.kind === 'resource' && input.resource === undefined;
  for (const rule of state.rules) {
    const outcome = evaluate(rule, input, context);
    if (outcome.kind === 'mismatch') continue; // can never match this subject
    // A rule with an arguments or paths condition decides some requests, and lets the others
    // through to later rules. Requests it denies are denied anyway; requests it allows or
    // confirms mean the subject is usable, so it must stay listed. A resource glob is such a
    // condition for a template, which stands for many URIs.
    if (
      rule.match.arguments !== null ||
      rule.match.paths !== null ||
      rule.match.principal !== null ||
      rule.match.session !== undefined ||
      (template && rule.match.resource !== null)
    ) {
      if (rule.action !== 'deny') return false;
      continue;
    }
    // Matches every call that got this far: it decides the rest.
    return rule.action === 'deny';
  }
  return state.defaultDecision.effect === 'deny';
}

/** The candidate rules of a tool, remembered until its annotations or trust change. */
function candidatesFor(state: EngineState, input: PolicyToolInput): Candidates {
  // Tools only: other kinds are rarer, and resource URIs are too many to remember.
  let byTool = state.candidates.get(input.server);
  const hit = byTool?.get(input.tool);
  if (hit !== undefined && hit.annotations === input.annotations && hit.trusted === input.trusted) return hit;
  const reader = annotationReader(input);
  const matching: PolicyRule[] = [];
  for (const rule of state.rules) {
    if (evaluate(rule, input, { reader, args: null, explain: false }).kind === 'mismatch') continue;
    matching.push(rule);
    // A rule with no condition on the call itself matches every call that reaches it: the
    // rules after it can never decide this tool's calls.
    if (!testsTheCall(rule)) break;
  }
  if (state.remembered >= 100_000) {
    state.candidates.clear();
    state.remembered = 0;
    byTool = undefined;
  }
  if (byTool === undefined) state.candidates.set(input.server, (byTool = new Map()));
  if (hit === undefined) state.remembered++;
  const entry: Candidates = {
    annotations: input.annotations,
    trusted: input.trusted,
    rules: matching,
    decisions: matching.map((rule) => state.decisions.get(rule)!),
  };
  byTool.set(input.tool, entry);
  return entry;
}

function decide(state: EngineState, input: PolicyCallInput): Decision {
  if (input.kind !== undefined && input.kind !== 'tool') return run(state, input, null);
  // No rules (warden's config without policies): every call has the default's decision.
  if (state.rules.length === 0) return state.defaultDecision;
  const args = input.arguments ?? {};
  const { rules: matching, decisions: theirs } = candidatesFor(state, input);
  for (let i = 0; i < matching.length; i++) {
    const rule = matching[i]!;
    if (!testsTheCall(rule)) return theirs[i]!;
    const verdict = testCallConditions(rule, args, input);
    if (verdict.kind === 'match') return theirs[i]!;
    if (verdict.kind === 'unverifiable') return uncheckedDecision(rule, verdict.why);
  }
  return state.defaultDecision;
}

/**
 * The rules whose conditions other than the call's own (principal, arguments, paths) hold for one
 * tool, up to the first that has none of those, with the decision each makes when it matches.
 */
interface Candidates {
  readonly annotations: unknown;
  readonly trusted: boolean;
  readonly rules: readonly PolicyRule[];
  readonly decisions: readonly Decision[];
}

/** Whether a rule has a condition on the call itself, known only when the call is made. */
function testsTheCall(rule: PolicyRule): boolean {
  const { match } = rule;
  return (
    match.principal !== null ||
    match.arguments !== null ||
    match.paths !== null ||
    match.session !== undefined
  );
}

/**
 * The conditions that depend on a call's arguments, in the order `evaluate` checks them. For
 * deciding only: an arguments mismatch comes back without its text.
 */
function testCallConditions(
  rule: PolicyRule,
  args: Readonly<Record<string, unknown>>,
  input: PolicyCallInput,
): ArgumentVerdict {
  const { arguments: schema, paths, session } = rule.match;
  if (rule.match.principal !== null) {
    const verdict = rule.match.principal.test(input.principal);
    if (verdict.kind !== 'match') return verdict;
  }
  if (session !== undefined && !sessionHas(session.has, input)) return UNSEEN;
  if (schema !== null) {
    const verdict = schema.holds(args);
    if (verdict.kind !== 'match') return verdict;
  }
  return paths === null ? MATCHED : paths.test(args);
}

const MATCHED: ArgumentVerdict = Object.freeze({ kind: 'match' });
const UNSEEN: ArgumentVerdict = Object.freeze({ kind: 'mismatch', why: '' });

function sessionHas(wanted: readonly FlowLabel[], input: PolicySubject): boolean {
  const seen = (input as PolicyCallInput).session;
  return wanted.every((label) => seen?.has(label) === true);
}

/** Annotations are read once per call, and only if some rule asks about them. */
function annotationReader(input: PolicySubject): () => AnnotationReading {
  let reading: AnnotationReading | undefined;
  const annotations = input.kind === undefined || input.kind === 'tool' ? input.annotations : undefined;
  return () => (reading ??= readAnnotations(annotations, input.trusted));
}

/** What `evaluate` knows of the request beyond its subject. */
interface EvaluationContext {
  readonly reader: () => AnnotationReading;
  readonly args: Readonly<Record<string, unknown>> | null;
  readonly explain: boolean;
}

type RuleMatch = PolicyRule['match'];

/**
 * Checks the rule's conditions, cheapest first, stopping at the first that fails. `args` null:
 * the call's arguments are not known, and an arguments condition counts as holding. `explain`
 * false: no `why` is written (listing asks thousands of tools only whether a rule can match,
 * and their texts were most of the garbage that listing made).
 *
 * Each group of conditions below returns the outcome that ends the evaluation, or undefined when
 * its conditions hold, writing what held into `held` (null when not explaining).
 */
function evaluate(
  rule: Pick<PolicyRule, 'match'>,
  input: PolicySubject,
  context: EvaluationContext,
): Outcome {
  const { match } = rule;
  // Nothing is allocated unless `explain`: listing asks this of every rule for every tool, and
  // the closures and arrays it once made per question were what pushed the gateway's memory
  // up while it listed 10,000 tools.
  const held: string[] | null = context.explain ? [] : null;
  const kind: RequestKind = input.kind ?? 'tool';
  const ended =
    namesOutcome(match, input, kind, held) ??
    resourceOutcome(match, input, kind, context.args, held) ??
    traitsOutcome(match, input, kind, context.reader, held) ??
    callOutcome(match, input, context.args, held);
  if (ended !== undefined) return ended;
  if (held === null) return UNEXPLAINED_MATCH;
  return { kind: 'match', why: held.length === 0 ? 'the rule matches every request' : held.join('; ') };
}

/** The server, kind, tool and prompt conditions. */
function namesOutcome(
  match: RuleMatch,
  input: PolicySubject,
  kind: RequestKind,
  held: string[] | null,
): Outcome | undefined {
  const explain = held !== null;
  if (match.server !== null) {
    const glob = firstMatchingGlob(match.server, input.server);
    if (glob === undefined) {
      return explain
        ? { kind: 'mismatch', why: `server "${input.server}" does not match ${listGlobs(match.server)}` }
        : UNEXPLAINED_MISMATCH;
    }
    held?.push(`server "${input.server}" matches "${glob}"`);
  }
  if (match.kind !== null && !match.kind.includes(kind)) {
    return explain
      ? { kind: 'mismatch', why: `a ${kind} request; the rule is about ${match.kind.join(', ')}` }
      : UNEXPLAINED_MISMATCH;
  }
  if (match.tool !== null) {
    if (input.kind !== undefined && input.kind !== 'tool')
      return explain ? { kind: 'mismatch', why: `a ${kind} request, not a tool call` } : UNEXPLAINED_MISMATCH;
    const glob = firstMatchingGlob(match.tool, input.tool);
    if (glob === undefined) {
      return explain
        ? { kind: 'mismatch', why: `tool "${input.tool}" does not match ${listGlobs(match.tool)}` }
        : UNEXPLAINED_MISMATCH;
    }
    held?.push(`tool "${input.tool}" matches "${glob}"`);
  }
  if (match.prompt !== null) {
    const prompt = input.kind === 'prompt' || input.kind === 'completion' ? input.prompt : undefined;
    const glob = prompt === undefined ? undefined : firstMatchingGlob(match.prompt, prompt);
    if (glob === undefined) {
      if (!explain) return UNEXPLAINED_MISMATCH;
      const why =
        prompt === undefined
          ? `a ${kind} request, not about a prompt`
          : `prompt "${prompt}" does not match ${listGlobs(match.prompt)}`;
      return { kind: 'mismatch', why };
    }
    held?.push(`prompt "${prompt}" matches "${glob}"`);
  }
  return undefined;
}

/** The resource condition; a template in a list (no URI, no arguments) counts as holding. */
function resourceOutcome(
  match: RuleMatch,
  input: PolicySubject,
  kind: RequestKind,
  args: EvaluationContext['args'],
  held: string[] | null,
): Outcome | undefined {
  if (match.resource === null) return undefined;
  const explain = held !== null;
  const about = input.kind === 'resource' || input.kind === 'completion';
  const uri = about ? input.resource : undefined;
  if (uri === undefined && !(about && input.kind === 'resource' && args === null)) {
    return explain
      ? { kind: 'mismatch', why: `a ${kind} request, not about a resource` }
      : UNEXPLAINED_MISMATCH;
  }
  if (uri === undefined) {
    // A template in a list: whether its URIs match is not known here (isHiddenFromList).
    held?.push('the resource is a template');
    return undefined;
  }
  const glob = firstMatchingGlob(match.resource, uri);
  if (glob === undefined) {
    return explain
      ? { kind: 'mismatch', why: `resource "${uri}" does not match ${listGlobs(match.resource)}` }
      : UNEXPLAINED_MISMATCH;
  }
  held?.push(`resource "${uri}" matches "${glob}"`);
  return undefined;
}

/** The server's trust and the tool's annotations (read only if a rule asks about them). */
function traitsOutcome(
  match: RuleMatch,
  input: PolicySubject,
  kind: RequestKind,
  reader: () => AnnotationReading,
  held: string[] | null,
): Outcome | undefined {
  const explain = held !== null;
  if (match.trusted !== null) {
    const what = input.trusted ? 'trusted' : 'not trusted';
    if (match.trusted !== input.trusted) {
      return explain
        ? { kind: 'mismatch', why: `server "${input.server}" is ${what}` }
        : UNEXPLAINED_MISMATCH;
    }
    held?.push(`server "${input.server}" is ${what}`);
  }
  if (match.annotations === null) return undefined;
  if (kind !== 'tool')
    return explain
      ? { kind: 'mismatch', why: `a ${kind} request: annotations are a tool's` }
      : UNEXPLAINED_MISMATCH;
  const reading = reader();
  for (const hint of HINT_NAMES) {
    const wanted = match.annotations[hint];
    if (wanted === undefined) continue;
    const { value, from } = reading[hint];
    if (value === wanted && !explain) continue;
    const described = `${hint} reads as ${String(value)} (${describeOrigin(from, input.server)})`;
    if (value !== wanted) {
      return explain
        ? { kind: 'mismatch', why: `${described}; the rule wants ${String(wanted)}` }
        : UNEXPLAINED_MISMATCH;
    }
    held?.push(described);
  }
  return undefined;
}

/** The conditions known only for a call: principal, arguments, paths (held in a list, where `args` is null). */
function callOutcome(
  match: RuleMatch,
  input: PolicySubject,
  args: EvaluationContext['args'],
  held: string[] | null,
): Outcome | undefined {
  const explain = held !== null;
  // Like the arguments, who calls is known only for a call: a list shows every principal the same.
  if (match.principal !== null) {
    if (args === null) {
      held?.push('principal not checked');
    } else {
      const verdict = match.principal.test(input.principal);
      if (verdict.kind === 'mismatch')
        return explain ? { kind: 'mismatch', why: verdict.why } : UNEXPLAINED_MISMATCH;
      held?.push(verdict.why);
    }
  }
  if (match.arguments !== null) {
    if (args === null) {
      held?.push('arguments not checked');
    } else {
      const verdict = match.arguments.test(args);
      if (verdict.kind === 'mismatch')
        return explain ? { kind: 'mismatch', why: verdict.why } : UNEXPLAINED_MISMATCH;
      if (verdict.kind === 'unverifiable') return { kind: 'unverifiable', why: verdict.why };
      held?.push('the arguments match');
    }
  }
  if (match.session !== undefined) {
    if (args === null) {
      held?.push('session not checked');
    } else {
      const wanted = match.session.has;
      if (!sessionHas(wanted, input)) {
        if (!explain) return UNEXPLAINED_MISMATCH;
        const seen = [...((input as PolicyCallInput).session ?? [])];
        return {
          kind: 'mismatch',
          why: `the session has seen ${seen.length === 0 ? 'no labels' : seen.join(', ')}; the rule wants ${wanted.join(', ')}`,
        };
      }
      held?.push(`the session has seen ${wanted.join(', ')}`);
    }
  }
  // After `arguments`: it may touch the filesystem, so it runs only when all else holds.
  if (match.paths !== null) {
    if (args === null) {
      held?.push('paths not checked');
    } else {
      const verdict = match.paths.test(args);
      if (verdict.kind === 'mismatch')
        return explain ? { kind: 'mismatch', why: verdict.why } : UNEXPLAINED_MISMATCH;
      if (verdict.kind === 'unverifiable') return { kind: 'unverifiable', why: verdict.why };
      held?.push(verdict.why ?? 'a path argument matches');
    }
  }
  return undefined;
}

/** The first of `globs` that `value` matches (a loop: no closure per question). */
function firstMatchingGlob(globs: readonly string[], value: string): string | undefined {
  for (const glob of globs) if (matchesGlob(glob, value)) return glob;
  return undefined;
}

const UNEXPLAINED_MISMATCH: Outcome = Object.freeze({ kind: 'mismatch', why: '' });
const UNEXPLAINED_MATCH: Outcome = Object.freeze({ kind: 'match', why: '' });

function describeOrigin(from: HintOrigin, server: string): string {
  switch (from) {
    case 'server':
      return 'as the trusted server says';
    case 'spec default':
      return 'the trusted server leaves it out: the spec default';
    case 'read-only tool':
      return 'the trusted server marks the tool read-only';
    case 'untrusted server':
      return `server "${server}" is not trusted, so its annotations are ignored`;
  }
}

function listGlobs(globs: readonly string[]): string {
  const quoted = globs.map((glob) => JSON.stringify(glob));
  return quoted.length === 1 ? (quoted[0] as string) : `any of ${quoted.join(', ')}`;
}

function ruleDecision(rule: PolicyRule): Decision {
  return {
    effect: rule.action,
    ruleId: rule.id,
    reason: rule.reason ?? madeUpReason(rule),
    source: lineOf(rule.source),
  };
}

/**
 * An arguments condition could not be evaluated (see argumentSchema.ts): whether the rule
 * matches is unknown, and so is the decision. Fail closed, naming the rule.
 */
function uncheckedDecision(rule: PolicyRule, why: string): Decision {
  return {
    effect: 'deny',
    ruleId: rule.id,
    reason: `Denied: the arguments could not be checked against policy rule "${rule.id}" (${why}).`,
    source: lineOf(rule.source),
  };
}

function madeUpReason(rule: PolicyRule): string {
  switch (rule.action) {
    case 'allow':
      return `Allowed by policy rule "${rule.id}".`;
    case 'deny':
      return `Denied by policy rule "${rule.id}".`;
    case 'confirm':
      return `Policy rule "${rule.id}" asks for the user's confirmation.`;
  }
}

function makeDefaultDecision(files: number, fallback: DefaultRule | null): Decision {
  if (files === 0) {
    return {
      effect: 'allow',
      ruleId: null,
      reason: 'No policy files are configured: calls are allowed.',
      source: null,
    };
  }
  if (fallback === null) {
    return {
      effect: 'allow',
      ruleId: null,
      reason: 'No policy rule matches this call and no policy file sets a default: allowed.',
      source: null,
    };
  }
  // The file's name only: the model sees this text, and a full path says more than it needs.
  const name = path.basename(fallback.file);
  const what = { allow: 'allow it', deny: 'deny it', confirm: "ask for the user's confirmation" }[
    fallback.effect
  ];
  return {
    effect: fallback.effect,
    ruleId: null,
    reason: `No policy rule matches this call; the default set in ${name} is to ${what}.`,
    source: lineOf(fallback.source),
  };
}

function lineOf(source: PolicySource): { file: string; line: number } {
  return { file: source.file, line: source.line };
}
