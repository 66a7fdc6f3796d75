import type { FlowLabel } from '../../config/types.js';
import { DeniedError } from '../../core/errors.js';
import { describeDecision } from '../../core/pipeline/decision.js';
import type { RoutedMessage, Stage } from '../../core/pipeline/types.js';
import type { PolicyCallInput, PolicyEngine } from './engine.js';
import { normalizeResourceUri } from './resourceUri.js';

export interface PolicyStageOptions {
  /** The engine in force; a getter because policy files are reloaded while serving. */
  readonly engine: () => PolicyEngine;
  /** Whether a server's annotations may be believed (`trusted:` in the config). */
  readonly trusted: (server: string) => boolean;
  /**
   * A refusal the config makes before any rule is asked (a server whose `sampling`,
   * `elicitation` or `roots` is off); undefined when the config allows the request.
   */
  readonly refusedByConfig?: (message: RoutedMessage) => string | undefined;
  /** The flow labels that reached the message's host session through earlier results. */
  readonly sessionLabels?: (message: RoutedMessage) => ReadonlySet<FlowLabel> | undefined;
}

/**
 * Decides every routed request, in both directions, before anything else can cost time or a
 * human's attention (after audit, before confirmation). A denied request never reaches the other
 * side. Arguments are judged as the other side will receive them: nothing between here and it
 * changes them.
 */
export function createPolicyStage(options: PolicyStageOptions): Stage {
  return function policy(message, next) {
    if (isTaskFollowUp(message)) {
      // The call that created the task was judged; asking about it afterwards is that call's own.
      message.record.decision = { effect: 'allow', rule: null };
      return next(message);
    }
    const refused = options.refusedByConfig?.(message);
    if (refused !== undefined) {
      message.record.decision = { effect: 'deny', rule: null };
      return Promise.reject(new DeniedError(`${refused} ${notDone(message)}`, null));
    }
    const judged = message as JudgedMessage;
    const engine = options.engine();
    // Only read when a rule asks: finding the session costs a key per call.
    const session = engine.asksSession ? options.sessionLabels?.(message) : undefined;
    const decision = engine.decide(policyInput(judged, options.trusted(message.server), session));
    message.record.decision =
      decision.layer === undefined
        ? { effect: decision.effect, rule: decision.ruleId }
        : { effect: decision.effect, rule: decision.ruleId, layer: decision.layer };
    if (decision.effect === 'deny') {
      return Promise.reject(
        new DeniedError(
          `${decision.reason} (${describeDecision(decision)}) ${notDone(message)}`,
          decision.ruleId,
        ),
      );
    }
    message.decision = decision;
    return next(message);
  };
}

type TaskFollowUp = Extract<RoutedMessage['kind'], `tasks/${string}`>;

/** Every kind the rules judge. */
export type JudgedMessage = RoutedMessage & { kind: Exclude<RoutedMessage['kind'], TaskFollowUp> };

function isTaskFollowUp(message: RoutedMessage): boolean {
  return message.kind.startsWith('tasks/');
}

/**
 * What a request is, in the policy's terms (task follow-ups are not judged: see the stage), with
 * who makes it. Built as one literal per kind: a copy spread to add the principal took the engine
 * off its fast property reads, which was most of what an idle policy cost a call (measured).
 */
export function policyInput(
  message: JudgedMessage,
  trusted: boolean,
  session?: ReadonlySet<FlowLabel>,
): PolicyCallInput {
  const { server, target, principal } = message;
  const args = message.arguments;
  switch (message.kind) {
    case 'tools/call': {
      const annotations = message.definition?.annotations;
      return { server, tool: target, annotations, trusted, arguments: args, principal, session };
    }
    case 'prompts/get':
      return { kind: 'prompt', server, prompt: target, trusted, arguments: args, principal, session };
    case 'resources/read':
    case 'resources/subscribe':
    case 'resources/unsubscribe': {
      const resource = normalizeResourceUri(target);
      return { kind: 'resource', server, resource, trusted, arguments: args, principal, session };
    }
    case 'completion/complete': {
      const ref = (message.params?.ref ?? {}) as { type?: unknown };
      return ref.type === 'ref/resource'
        ? {
            kind: 'completion',
            server,
            resource: normalizeResourceUri(target),
            trusted,
            arguments: args,
            principal,
            session,
          }
        : { kind: 'completion', server, prompt: target, trusted, arguments: args, principal, session };
    }
    case 'sampling/createMessage':
      return { kind: 'sampling', server, trusted, arguments: args, principal, session };
    case 'elicitation/create':
      return { kind: 'elicitation', server, trusted, arguments: args, principal, session };
    case 'roots/list':
      return { kind: 'roots', server, trusted, arguments: args, principal, session };
    case 'authorize':
      return { kind: 'authorize', server, trusted, arguments: args, principal, session };
  }
}

/** The end of a refusal: what did not happen. */
function notDone(message: RoutedMessage): string {
  const { server, target } = message;
  switch (message.kind) {
    case 'tools/call':
      return `The call to tool "${target}" on server "${server}" was not run.`;
    case 'prompts/get':
      return `Prompt "${target}" of server "${server}" was not fetched.`;
    case 'resources/read':
      return `Resource "${target}" of server "${server}" was not read.`;
    case 'resources/subscribe':
    case 'resources/unsubscribe':
      return `The ${message.kind} of "${target}" on server "${server}" was not sent.`;
    case 'completion/complete':
      return `The completion for "${target}" on server "${server}" was not asked.`;
    case 'authorize':
      return `Nobody was asked to sign in to server "${server}".`;
    default:
      return `The ${message.kind} request of server "${server}" did not reach the host.`;
  }
}
