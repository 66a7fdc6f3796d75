import type { IncomingRequest } from '../rpc/peer.js';

/**
 * "The first tool call answered", an event of the whole gateway: it fires once, when the answer
 * to the first `tools/call` of any of its host connections (stdio, an HTTP session, a stateless
 * request) has been handed to that connection's transport. By then the gateway has run its call
 * path once, which is what a process that wants to keep its compiled code waits for.
 *
 * Every router of the gateway shares one: each notes its `tools/call` requests until it has
 * fired, and nothing after, so later calls pay a single check for it.
 */
export class FirstToolCall {
  /** Resolves once, as the first answer to a `tools/call` leaves. */
  readonly answered: Promise<void>;
  private pending = true;
  private fire: () => void = () => {};

  constructor() {
    this.answered = new Promise((resolve) => (this.fire = resolve));
  }

  /** A `tools/call` came in: while the event has not fired, its answer may be the one that fires it. */
  watch(request: IncomingRequest): void {
    if (this.pending) request.afterAnswer = this.noteAnswered;
  }

  private readonly noteAnswered = (): void => {
    if (!this.pending) return;
    this.pending = false;
    this.fire();
  };
}
