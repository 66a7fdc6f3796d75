/**
 * `gateway.maxMessageSize` for HTTP upstreams. The SDK's client transport reads a JSON response
 * with `response.json()` and an SSE stream through a parser that buffers an event until it ends,
 * both without a bound. We hand it a `fetch` whose response bodies stop, with an error, once a
 * JSON body or a single SSE event grows past the limit; the connection is then cancelled, so no
 * more than about the limit is ever buffered.
 */

/** What was cut off, for the owner to fail the request it answered (when known) and log. */
export interface HttpOversize {
  /** The id of the request whose POST this response answers; undefined for the standalone GET stream. */
  readonly id: number | undefined;
  readonly what: 'response body' | 'SSE event';
  /** Bytes read before reading stopped (just over the limit). */
  readonly bytes: number;
}

export interface LimitedFetchOptions {
  readonly maxMessageBytes: number;
  readonly onOversize: (info: HttpOversize) => void;
  /** The fetch to wrap (tests); the global one otherwise. */
  readonly fetch?: typeof fetch;
}

/** The error a cut-off body fails with; its message is the one the owner reports. */
export class HttpMessageTooLargeError extends Error {
  override readonly name = 'HttpMessageTooLargeError';
}

export function oversizeMessage(info: HttpOversize, limit: number): string {
  return (
    `sent ${info.what === 'SSE event' ? 'an' : 'a'} ${info.what} over the limit of ${limit} bytes (gateway.maxMessageSize); ` +
    `stopped reading it after ${info.bytes} bytes`
  );
}

/**
 * Our requests' ids, read from the body we POST: ids towards upstreams are plain integers, and
 * `JSON.stringify` puts `jsonrpc` first, then `id`, so a prefix match is enough.
 */
function requestIdOf(body: unknown): number | undefined {
  if (typeof body !== 'string') return undefined;
  const match = /^\{"jsonrpc":"2\.0","id":(\d+),/.exec(body);
  return match === null ? undefined : Number(match[1]);
}

const CR = 0x0d;
const LF = 0x0a;

/** Counts a whole body; errors once it passes `limit`. */
function bodyLimit(limit: number, onOver: (bytes: number) => Error): TransformStream<Uint8Array, Uint8Array> {
  let total = 0;
  return new TransformStream({
    transform(chunk, controller) {
      total += chunk.byteLength;
      if (total > limit) controller.error(onOver(total));
      else controller.enqueue(chunk);
    },
  });
}

/**
 * Counts the bytes of the SSE event being received (an event ends at a blank line; lines end in
 * CRLF, LF or CR); errors once one event passes `limit`. A stream that never ends an event
 * therefore stops at the limit instead of growing the parser's buffer without end.
 */
function sseEventLimit(
  limit: number,
  onOver: (bytes: number) => Error,
): TransformStream<Uint8Array, Uint8Array> {
  let eventBytes = 0;
  let lineBytes = 0;
  let afterCr = false;
  return new TransformStream({
    transform(chunk, controller) {
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i]!;
        if (byte === LF && afterCr) {
          // The LF of a CRLF: the CR already ended the line.
          afterCr = false;
          continue;
        }
        afterCr = byte === CR;
        if (byte === LF || byte === CR) {
          if (lineBytes === 0) eventBytes = 0;
          lineBytes = 0;
        } else {
          lineBytes++;
          if (++eventBytes > limit) {
            controller.error(onOver(eventBytes));
            return;
          }
        }
      }
      controller.enqueue(chunk);
    },
  });
}

/**
 * A `fetch` for the SDK's HTTP client transport whose successful and error response bodies are
 * bounded: a JSON (or other) body by its total size, an SSE stream by the size of each event.
 * Redirects pass untouched (the SDK inspects them itself).
 */
export function limitedFetch(options: LimitedFetchOptions): typeof fetch {
  const { maxMessageBytes: limit, onOversize } = options;
  const inner = options.fetch ?? fetch;
  return async (input, init) => {
    const response = await inner(input, init);
    if (response.body === null || (response.status >= 300 && response.status < 400)) return response;
    const id = requestIdOf(init?.body);
    const sse = (response.headers.get('content-type') ?? '').toLowerCase().includes('text/event-stream');
    const what = sse ? 'SSE event' : 'response body';
    const onOver = (bytes: number): Error => {
      const info: HttpOversize = { id, what, bytes };
      onOversize(info);
      return new HttpMessageTooLargeError(oversizeMessage(info, limit));
    };
    const body = response.body.pipeThrough(sse ? sseEventLimit(limit, onOver) : bodyLimit(limit, onOver));
    return new Response(body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
