import { withoutEnvelope } from '../protocol/envelope.js';
import type { UpstreamEra } from '../upstreams/upstreamEra.js';
import type { OutgoingOptions } from '../rpc/peer.js';
import type { Params } from '../protocol/jsonRpc.js';
import type { Outcome } from '../rpc/outcome.js';
import { driveTask } from './drive.js';
import type { Next, RoutedMessage } from './types.js';
import { afterUrlElicitation } from './urlRequired.js';

/** Something a routed message can be sent to: an upstream, or the host. */
export interface Recipient {
  /** An upstream's era on its live connection (the host has none here). */
  readonly era?: UpstreamEra | undefined;
  /** `origin`: for the host, the upstream that asks (a modern host is asked within its call). */
  requestOutcome(
    method: string,
    params: Params | undefined,
    options: OutgoingOptions,
    origin?: { readonly server: string },
  ): Promise<Outcome>;
}

export interface ForwardOptions {
  /** The upstream a message to `server` goes to; undefined when there is none by that name. */
  readonly upstream: (server: string) => Recipient | undefined;
  /** The host, for requests upstreams make of it. */
  readonly host: Recipient;
  /** An answer the gateway gives itself instead of sending the message on (fixed roots). */
  readonly answerLocally?: (message: RoutedMessage) => Outcome | undefined;
  /**
   * A modern upstream asked for input (an InputRequiredResult): gets the answers from the host
   * through the gateway's own questions, whatever the host's era, so they are mediated like any
   * other server-to-host request, and retries (`retry` resends the message with extra params).
   */
  readonly fulfilInput?: (
    message: RoutedMessage,
    outcome: Outcome,
    retry: (extra: Params) => Promise<Outcome>,
  ) => Promise<Outcome>;
  /**
   * Asks the host of `message` a question on behalf of its server, through the pipeline (a
   * modern host within its call): how a legacy server's -32042 reaches a modern host.
   */
  readonly askHost?: (message: RoutedMessage, method: string, params: Params) => Promise<Outcome>;
  /** A sign-in to a server (`kind: authorize`), which the gateway carries out with the host. */
  readonly authorize?: (message: RoutedMessage) => Promise<Outcome>;
}

/**
 * The pipeline's terminal: sends the message to the other side under its own names (the
 * upstream's tool or prompt name), with the message's signal and progress listener riding on
 * the peer's request table. What comes back is an outcome that still holds the peer's bytes.
 */
export function createForward(options: ForwardOptions): Next {
  return function forward(message: RoutedMessage): Promise<Outcome> {
    if (message.kind === 'authorize')
      return options.authorize === undefined
        ? Promise.reject(new Error(`no sign-in for server "${message.server}"`))
        : options.authorize(message);
    const local = message.direction === 'host' ? options.answerLocally?.(message) : undefined;
    if (local !== undefined) return Promise.resolve(local);
    const recipient = message.direction === 'host' ? options.host : options.upstream(message.server);
    if (recipient === undefined)
      return Promise.reject(new Error(`no upstream named "${message.server}" to route to`));
    // A legacy upstream never sees a modern host's envelope: it is left out as the params are
    // built, rather than the upstream copying them again without it. Its era is read now, as
    // the request goes out: the message's is the one it had when the message was routed.
    const legacy = message.direction === 'upstream' && recipient.era !== 'modern';
    // A task the host cannot run: the gateway runs it and answers with its final result.
    if (message.task?.drivenBy === 'gateway')
      return driveTask(recipient, message, paramsOf(message, legacy)!);
    // The message carries the request options itself (its signal, progress listener and
    // `answerAs`, which the peer applies to the answer as it arrives).
    const sent = recipient.requestOutcome(message.kind, paramsOf(message, legacy), message, message);
    if (message.upstreamEra !== 'modern') {
      const { askHost } = options;
      if (message.hostEra !== 'modern' || askHost === undefined || message.direction !== 'upstream')
        return sent;
      return sent.catch((error: unknown) =>
        afterUrlElicitation(
          error,
          (method, params) => askHost(message, method, params),
          () => recipient.requestOutcome(message.kind, paramsOf(message, legacy), message, message),
        ),
      );
    }
    const { fulfilInput } = options;
    if (fulfilInput === undefined) return sent;
    return sent.then((outcome) =>
      fulfilInput(message, outcome, (extra) =>
        recipient.requestOutcome(message.kind, { ...paramsOf(message), ...extra }, message),
      ),
    );
  };
}

/**
 * The params a message is sent with: its own, with the upstream's name and the sender's `_meta`
 * (without a modern host's envelope when `legacy`: what a handshake-era server is sent of it).
 */
export function paramsOf(message: RoutedMessage, legacy = false): Params | undefined {
  const meta = legacy ? withoutEnvelope(message.meta) : message.meta;
  if (message.kind === 'tools/call') {
    const params: Params = { name: message.target };
    if (message.arguments !== undefined) params.arguments = message.arguments;
    if (message.task !== undefined) params.task = message.task.params;
    if (meta !== undefined) params._meta = meta;
    return params;
  }
  const { params } = message;
  if (params === undefined) return meta === undefined ? undefined : { _meta: meta };
  const sent: Params = { ...params };
  if (meta === undefined) delete sent._meta;
  else sent._meta = meta;
  return sent;
}
