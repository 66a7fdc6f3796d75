import { DEPTH } from './compose.js';
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
  const message: RoutedMessage = {
    kind: fields.kind,
    direction: fields.direction,
    server: fields.server,
    target: fields.target,
    exposedName: fields.exposedName,
    definition: fields.definition,
    arguments: fields.arguments,
    params: fields.params,
    meta: fields.meta,
    requestId: fields.requestId,
    signal: fields.signal,
    onProgress: fields.onProgress,
    task: fields.task,
    decision: fields.decision,
    record: fields.record ?? { repairs: [] },
    hostEra: fields.hostEra,
    upstreamEra: fields.upstreamEra,
    answerAs: fields.answerAs,
    host: fields.host,
    principal: fields.principal,
  };
  // Pipeline state, which no copy may carry: see compose.ts.
  Object.defineProperty(message, DEPTH, { value: undefined, writable: true, enumerable: false });
  return message;
}

/**
 * A new message made from `message`, with `changes` over its members. It shares the old one's
 * `record` (unless `changes` gives another), so what the stages it passes write reaches the
 * same audit record. What the pipeline keeps about a message (how far into the stages it has
 * gone, see compose.ts) is never carried: the new message may pass the pipeline from the start.
 */
export function derive(message: RoutedMessage, changes: Partial<RoutedMessage>): RoutedMessage {
  return routedMessage({ ...message, ...changes });
}
