import type { RoutedMessage } from './types.js';

/** The members every routed message is made with; the others may be left out (undefined). */
type Given = 'kind' | 'direction' | 'server' | 'target' | 'exposedName' | 'signal';

/** What `routedMessage` makes a message from. */
export type RoutedMessageFields = Pick<RoutedMessage, Given> & Partial<Omit<RoutedMessage, Given>>;

/**
 * The one way a routed message is made. Every message gets the same members in the same order,
 * none spread in: a literal with a spread is built member by member in the runtime, and the
 * stages' reads of messages of differing shapes go the slow way (both measured on every call).
 * Only the members of `RoutedMessage` are taken from `fields`; anything else on it stays behind.
 * An absent `record` is a fresh one.
 */
export function routedMessage(fields: RoutedMessageFields): RoutedMessage {
  return new Routed(fields);
}

/**
 * A routed message as `routedMessage` makes it. Its one member beyond `RoutedMessage` is the
 * pipeline's state, private: no copy carries it, and nothing outside sees it (see compose.ts).
 * A private field rather than a property defined not enumerable: defining a property cost a call
 * more than all the rest of making its message (measured).
 */
class Routed implements RoutedMessage {
  readonly kind: RoutedMessage['kind'];
  readonly direction: RoutedMessage['direction'];
  readonly server: string;
  readonly target: string;
  readonly exposedName: string;
  readonly definition: RoutedMessage['definition'];
  readonly arguments: RoutedMessage['arguments'];
  readonly params: RoutedMessage['params'];
  readonly meta: RoutedMessage['meta'];
  readonly requestId: RoutedMessage['requestId'];
  readonly signal: RoutedMessage['signal'];
  onProgress: RoutedMessage['onProgress'];
  readonly task: RoutedMessage['task'];
  decision: RoutedMessage['decision'];
  readonly record: RoutedMessage['record'];
  readonly hostEra: RoutedMessage['hostEra'];
  readonly upstreamEra: RoutedMessage['upstreamEra'];
  readonly answerAs: RoutedMessage['answerAs'];
  readonly host: RoutedMessage['host'];
  readonly principal: RoutedMessage['principal'];
  readonly takenOverBy: RoutedMessage['takenOverBy'];
  /** How far into the stages this message has gone; undefined before the first. */
  #depth: number | undefined = undefined;

  constructor(fields: RoutedMessageFields) {
    this.kind = fields.kind;
    this.direction = fields.direction;
    this.server = fields.server;
    this.target = fields.target;
    this.exposedName = fields.exposedName;
    this.definition = fields.definition;
    this.arguments = fields.arguments;
    this.params = fields.params;
    this.meta = fields.meta;
    this.requestId = fields.requestId;
    this.signal = fields.signal;
    this.onProgress = fields.onProgress;
    this.task = fields.task;
    this.decision = fields.decision;
    this.record = fields.record ?? { repairs: [] };
    this.hostEra = fields.hostEra;
    this.upstreamEra = fields.upstreamEra;
    this.answerAs = fields.answerAs;
    this.host = fields.host;
    this.principal = fields.principal;
    this.takenOverBy = fields.takenOverBy;
  }

  static depthOf(message: Routed): number | undefined {
    return message.#depth;
  }

  static setDepth(message: Routed, depth: number): void {
    message.#depth = depth;
  }
}

/**
 * How far into the stages `message` has gone (see compose.ts). A message not made by
 * `routedMessage` (a test's literal) keeps it under the `DEPTH` symbol instead.
 */
export function pipelineDepth(message: RoutedMessage): number | undefined {
  return message instanceof Routed ? Routed.depthOf(message) : (message as WithDepth)[DEPTH];
}

/** Notes that `message` has entered the stage at `depth`. */
export function enterDepth(message: RoutedMessage, depth: number): void {
  if (message instanceof Routed) Routed.setDepth(message, depth);
  else (message as WithDepth)[DEPTH] = depth;
}

/**
 * How deep into the stages a message has gone. State of the message that no copy carries: a
 * private field of what routedMessage() makes (see pipelineDepth), so neither derive() nor a
 * spread copies it, and a message made from another starts with no depth of its own rather than
 * being refused for its original's. (A WeakMap beside the messages did the same at several times
 * the cost: one lookup and often one insertion per stage per message, plus the collector's work
 * on its entries.) A message made otherwise (a test's literal) keeps it under this symbol.
 */
export const DEPTH: unique symbol = Symbol('pipeline depth');

type WithDepth = RoutedMessage & { [DEPTH]?: number };

/**
 * A new message made from `message`, with `changes` over its members. It shares the old one's
 * `record` (unless `changes` gives another), so what the stages it passes write reaches the
 * same audit record. What the pipeline keeps about a message (how far into the stages it has
 * gone, see compose.ts) is never carried: the new message may pass the pipeline from the start.
 */
export function derive(message: RoutedMessage, changes: Partial<RoutedMessage>): RoutedMessage {
  return routedMessage({ ...message, ...changes });
}
