import { deepFreeze } from '../../lib/freeze.js';
import type { ConfirmationConfig } from '../../config/types.js';
import {
  ContinuedElsewhereError,
  DeniedError,
  formatMs,
  HostCancelledError,
  MissingCapabilityError,
} from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import { Cancellation, type CancelSignal } from '../../core/rpc/cancellation.js';
import type { CallRecord, Next, RoutedMessage, Stage } from '../../core/pipeline/types.js';
import { derive } from '../../core/pipeline/routedMessage.js';
import type { Outcome } from '../../core/rpc/outcome.js';
import type { JsonRpcErrorObject, Params } from '../../core/protocol/jsonRpc.js';
import { describeDecision } from '../../core/pipeline/decision.js';
import { runConfirmationCommand } from './command.js';
import { principalKey } from '../../core/principal.js';

/** The host's answer to a question: its result, or its error. */
export type HostAnswer =
  | { readonly result: Record<string, unknown> }
  | { readonly error: JsonRpcErrorObject }
  /** What the host sent instead of a result object, e.g. "a null result". */
  | { readonly malformed: string }
  /**
   * The host answered through another replica, which ran the call (its audit session): replicas
   * that share a store.
   */
  | { readonly continuedBy: string };

export interface ConfirmationOptions {
  readonly config: ConfirmationConfig;
  /**
   * Asks the host through `elicitation/create`; undefined when the host did not declare the
   * elicitation capability. Aborting `signal` withdraws the question (`notifications/cancelled`).
   */
  readonly askHost: (
    params: Params,
    signal: CancelSignal,
    call: RoutedMessage,
  ) => Promise<HostAnswer> | undefined;
  /** Arguments as shown to the user: secrets redacted. */
  readonly redact: (value: unknown) => unknown;
  readonly logger: Logger;
}

/** Arguments longer than this are cut in the question: the user needs the gist, not a megabyte. */
const SHOWN_ARGUMENTS_CHARS = 2000;

/** What a request would do, in words, with its arguments as the user should see them. */
function describeCall(call: RoutedMessage, redact: (value: unknown) => unknown): string {
  const args = JSON.stringify(redact(call.arguments ?? {}), null, 2);
  const shown = args.length > SHOWN_ARGUMENTS_CHARS ? `${args.slice(0, SHOWN_ARGUMENTS_CHARS)}… (cut)` : args;
  return `Server "${call.server}" wants to ${action(call)} with arguments:\n${shown}`;
}

function action(call: RoutedMessage): string {
  switch (call.kind) {
    case 'tools/call':
      return `run tool "${call.target}"`;
    case 'prompts/get':
      return `get prompt "${call.target}"`;
    case 'resources/read':
      return `read resource "${call.target}"`;
    case 'resources/subscribe':
      return `subscribe to resource "${call.target}"`;
    case 'resources/unsubscribe':
      return `unsubscribe from resource "${call.target}"`;
    case 'completion/complete':
      return `complete an argument of "${call.target}"`;
    case 'sampling/createMessage':
      return 'ask the host model for a completion (sampling)';
    case 'elicitation/create':
      return 'ask you a question (elicitation)';
    case 'roots/list':
      return 'list your roots';
    case 'authorize':
      return 'have you sign in to it';
    case 'tasks/get':
    case 'tasks/result':
    case 'tasks/cancel':
    case 'tasks/list':
    case 'tasks/update':
      // Never asked in practice: the policy allows these follow-ups of a call it already judged.
      return `use a task with ${call.kind}`;
  }
}

/** The request in the words of refusals: `tool "x" on server "y"`. */
function subject(call: RoutedMessage): string {
  const what = call.kind === 'tools/call' ? `tool "${call.target}"` : `${call.kind} "${call.target}"`;
  return `${what} on server "${call.server}"`;
}

/**
 * Asks a human before a request the policy marked `confirm` goes on. Outside the timeout
 * stage, so the human's time does not count against the tool. Fails closed: no way to ask, no
 * answer in time, decline or cancel all mean the call is not run. An approved call runs once,
 * with exactly the arguments that were shown.
 */
export function createConfirmationStage(options: ConfirmationOptions): Stage {
  const state: ConfirmationState = { options, remembered: new Set<string>() };
  return function confirmation(call, next) {
    // Most calls are not asked about: they pass straight through, without a promise of ours.
    return call.decision?.effect === 'confirm' ? confirm(state, call, next) : next(call);
  };
}

/** What the stage keeps between calls. */
interface ConfirmationState {
  readonly options: ConfirmationOptions;
  /**
   * Tools the user chose to allow for the rest of this session ("remember"), per principal: with
   * several users on one gateway, one user's "remember" never answers another's question.
   */
  readonly remembered: Set<string>;
}

/** One call being confirmed: what settling its verdict needs. */
interface PendingConfirmation {
  readonly call: RoutedMessage;
  /** The frozen copy the human is shown, which is what runs when approved. */
  readonly approved: RoutedMessage;
  readonly record: NonNullable<CallRecord['decision']>;
  /** The call's entry in `remembered`. */
  readonly key: string;
  readonly ruleId: string | null;
  readonly next: Next;
}

async function confirm(state: ConfirmationState, call: RoutedMessage, next: Next): Promise<Outcome> {
  const { config, logger } = state.options;
  const decision = call.decision!;
  const record = call.record.decision ?? { effect: 'confirm', rule: decision.ruleId };
  call.record.decision = record;
  const who = call.principal === undefined ? '' : principalKey(call.principal);
  const key = `${who}\u0001${call.kind}\u0000${call.server}\u0000${call.target}`;
  if (state.remembered.has(key)) {
    record.confirmed = true;
    record.how = 'remembered';
    return next(call);
  }
  // What the human approves is what runs: a frozen copy, taken before asking.
  const approved = derive(call, {
    arguments: deepFreeze(structuredClone(call.arguments)),
    params: deepFreeze(structuredClone(call.params)),
  });
  const pending: PendingConfirmation = { call, approved, record, key, ruleId: decision.ruleId, next };
  const why = `${decision.reason} (${describeDecision(decision)})`;

  for (const method of config.methods) {
    if (method === 'elicitation') {
      const verdict = await askThroughHost(state.options, call, why);
      if (verdict === 'unavailable') continue;
      record.how = 'elicitation';
      return settle(state, pending, verdict, 'the user (asked through the host)');
    }
    if (method === 'command' && config.command !== undefined) {
      record.how = 'command';
      const verdict = await runConfirmationCommand({
        command: config.command,
        call: approved,
        reason: why,
        timeoutMs: config.timeoutMs,
        signal: call.signal,
        logger,
      });
      return settle(state, pending, verdict, `the confirmation command (${config.command.command})`);
    }
  }
  record.confirmed = false;
  record.how = 'unavailable';
  throw noWayToAsk(config, call, why, decision.ruleId);
}

/** The refusal of a call nobody could be asked about. */
function noWayToAsk(
  config: ConfirmationConfig,
  call: RoutedMessage,
  why: string,
  ruleId: string | null,
): MissingCapabilityError | DeniedError {
  // A 2026-07-28 host declares its capabilities per request: one that left elicitation out is
  // told so with the revision's error, which names what to declare when it retries.
  if (call.hostEra === 'modern' && config.methods.includes('elicitation'))
    return new MissingCapabilityError(
      `${subject(call)} needs confirmation (${why}); declare elicitation on the request to be asked, ` +
        `or set confirmation.command in the mcp-warden config`,
      { elicitation: { form: {} } },
    );
  return new DeniedError(
    `${capitalize(subject(call))} needs confirmation (${why}), but there is no way to ask: ` +
      `the host did not declare MCP elicitation and no confirmation.command is configured, so it was not run. ` +
      `Use a host that supports elicitation, or set confirmation.command in the mcp-warden config.`,
    ruleId,
  );
}

/** Runs the approved copy, or refuses the call saying why, by what `who` answered. */
async function settle(
  state: ConfirmationState,
  pending: PendingConfirmation,
  verdict: Verdict,
  who: string,
): Promise<Outcome> {
  const { call, record, ruleId } = pending;
  if (verdict === 'yes' || verdict === 'remember') {
    record.confirmed = true;
    if (verdict === 'remember') state.remembered.add(pending.key);
    return pending.next(pending.approved);
  }
  if (typeof verdict === 'object' && 'continuedBy' in verdict) {
    // Neither approved nor declined here: the answer, whatever it was, was acted on there.
    record.how = 'continued_elsewhere';
    throw new ContinuedElsewhereError(verdict.continuedBy);
  }
  record.confirmed = false;
  if (verdict === 'timeout') {
    record.how = 'timeout';
    throw new DeniedError(
      `No confirmation from ${who} within ${formatMs(state.options.config.timeoutMs)} for ${subject(call)}, so it was not run.`,
      ruleId,
    );
  }
  if (typeof verdict === 'object' && 'failed' in verdict)
    throw new DeniedError(
      `The confirmation request for ${subject(call)} got no answer from ${who} (${verdict.failed}), so it was not run.`,
      ruleId,
    );
  if (typeof verdict === 'object')
    throw new DeniedError(
      `The host answered the confirmation request for ${subject(call)} with ${verdict.malformed}, ` +
        `not an elicitation result (action: accept, decline or cancel), so it was not run.`,
      ruleId,
    );
  throw new DeniedError(`Declined by ${who}: ${subject(call)} was not run.`, ruleId);
}

/**
 * What a confirmation came to; `malformed` when the host's answer was not an elicitation result
 * at all, `failed` when the question got an error instead of an answer (both fail closed,
 * saying so).
 */
type Verdict =
  | 'yes'
  | 'remember'
  | 'no'
  | 'timeout'
  | { readonly malformed: string }
  | { readonly failed: string }
  | { readonly continuedBy: string };

/** The elicitation request that asks about `call`, with the "remember" box when offered. */
function questionFor(options: ConfirmationOptions, call: RoutedMessage, why: string): Params {
  return {
    message: `${describeCall(call, options.redact)}\n\nmcp-warden asks because: ${why}\nAllow it?`,
    requestedSchema: {
      type: 'object',
      properties: options.config.offerRemember
        ? {
            remember: {
              type: 'boolean',
              title: 'Remember for this session',
              description: `Allow "${call.target}" on "${call.server}" without asking again until the host restarts mcp-warden.`,
              default: false,
            },
          }
        : {},
    },
  };
}

/** One question through MCP elicitation, bounded by the confirmation timeout and the host's cancel. */
async function askThroughHost(
  options: ConfirmationOptions,
  call: RoutedMessage,
  why: string,
): Promise<Verdict | 'unavailable'> {
  // The question is withdrawn when the confirmation times out or the host cancels the call.
  const { cancellation: question, dispose } = Cancellation.linkedTo(call.signal);
  const timer = setTimeout(
    () => question.cancel(new Error('confirmation timed out')),
    options.config.timeoutMs,
  );
  try {
    const answer = options.askHost(questionFor(options, call, why), question, call);
    if (answer === undefined) return 'unavailable';
    const reply = await answer;
    // The host cancelled the call itself while we were asking: nothing runs, nothing is answered.
    if (call.signal.cancelled) throw call.signal.reason ?? new HostCancelledError('cancelled');
    // Asked here, answered through another replica that ran the call: not a timeout here.
    if ('continuedBy' in reply) return { continuedBy: reply.continuedBy };
    if (question.cancelled) return 'timeout';
    if ('malformed' in reply) return { malformed: String(reply.malformed) };
    // The question failed on its way (the host answered with an error, or the gateway could
    // not put it to the host): nobody declined, and the model must not be told so.
    if (!('result' in reply)) return { failed: reply.error.message };
    const result: unknown = reply.result;
    if (typeof result !== 'object' || result === null || Array.isArray(result))
      return { malformed: result === null ? 'a null result' : `a result that is not an object` };
    const { action, content } = reply.result as { action?: unknown; content?: { remember?: unknown } };
    if (action !== 'accept') return 'no';
    return content?.remember === true ? 'remember' : 'yes';
  } finally {
    clearTimeout(timer);
    dispose();
  }
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
