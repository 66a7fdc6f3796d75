import type { JsonRpcErrorObject, JsonRpcMessage } from '../protocol/jsonRpc.js';
import type { EncodedResult } from './encoded.js';
import type { LargeLine } from './rawResult.js';

/*
 * The port a peer speaks to. It lives with the peer, below the transports that implement it
 * (stdio lines, child processes, Streamable HTTP), so the peer never reaches up for them.
 */

/**
 * The connection interface every part of the gateway speaks: the SDK's `Transport` members
 * (start, send, close, onmessage, onclose, onerror), typed with our lean message types, so the
 * SDK's HTTP transports fit behind it.
 *
 * Two conventions keep the hot path cheap without widening the interface:
 * - `send` may be given an `EncodedResult`, a response whose result is already JSON text (an
 *   upstream's own bytes, a cached list). A transport that writes text writes it as it is; any
 *   other sends the parsed value.
 * - A transport whose sends cannot fail returns `SENT`, and reports a broken connection through
 *   `onerror` and `onclose`; callers then need not handle the promise (see peer.ts).
 */
export interface MessageTransport {
  start(): Promise<void>;
  send(message: OutgoingMessage): Promise<void>;
  close(): Promise<void>;
  /** `extra` carries what the transport knows of the message beyond the message itself. */
  onmessage?: (message: JsonRpcMessage, extra?: MessageExtra) => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /**
   * The other side's requests carry `_meta[POSTED_FOR]`, the id of our request whose answer
   * stream they came on, written by this transport (see core/protocol/postedFor.ts).
   */
  readonly tiesRequestsToPosts?: boolean;
}

/** What a transport knows of one message it delivers beyond the message itself. */
export interface MessageExtra {
  /**
   * The text the message was parsed from (stdio), for byte-exact forwarding; `large` its bytes
   * when it is large (see LARGE_LINE_BYTES in transports/lineDecoder.ts), in which case `line`
   * may have its long strings left out. Absent when the transport has no text for it.
   */
  readonly line?: string;
  readonly large?: LargeLine;
  /**
   * Set on a request the transport would not deliver whole (its params nest deeper than
   * `maxDepth`): it comes without its params, and is to be answered with this error.
   */
  readonly refused?: JsonRpcErrorObject;
  /**
   * Set on a request the transport runs again for a call that another replica was running when
   * it died (a shared session over HTTP): the name (audit session) of this replica, which took
   * the call over. Beside the message rather than in it, so that no copy of its params on the
   * way to the router can lose it, and no host can send it.
   */
  readonly takenOverBy?: string;
}

export type OutgoingMessage = JsonRpcMessage | EncodedResult;

/** What a send that cannot fail returns: one settled promise for every message. */
export const SENT: Promise<void> = Promise.resolve();
