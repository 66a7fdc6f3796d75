import { POSTED_FOR, markedPostedFor } from '../protocol/postedFor.js';
import type { JsonRpcRequest } from '../protocol/jsonRpc.js';

type Fetch = (url: string | URL, init?: RequestInit) => Promise<Response>;

/**
 * A `fetch` for the SDK's HTTP client transport that ties each server request arriving on the
 * SSE stream of one of our POSTs to the request that POST carried: it writes that request's id
 * under `_meta[POSTED_FOR]` (see core/protocol/postedFor.ts). The SDK's transport does not say
 * which stream a message came on, and without the tie a question asked during one user's call
 * could only be routed by guessing whose call it is. On every other stream (the standalone GET
 * stream, a resumed one) and in JSON bodies, a mark a server wrote itself is removed, so a
 * server cannot name a call its question belongs to.
 */
export function markingFetch(base: Fetch): Fetch {
  return async (url, init) => {
    const response = await base(url, init);
    if (response.body === null || !response.ok) return response;
    const type = (response.headers.get('content-type') ?? '').toLowerCase();
    const posted = init?.method === 'POST' ? postedIdOf(init.body) : undefined;
    if (type.includes('text/event-stream'))
      return rebuilt(response, response.body.pipeThrough(sseMarker(posted)));
    if (!type.includes('application/json')) return response;
    const text = await response.text();
    return rebuilt(
      response,
      text.includes(POSTED_FOR) || posted !== undefined ? markedJson(text, posted) : text,
    );
  };
}

function rebuilt(response: Response, body: ReadableStream<Uint8Array> | string): Response {
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/** The id of the request a POST body carries (ours are plain integers); undefined otherwise. */
function postedIdOf(body: unknown): number | undefined {
  if (typeof body !== 'string') return undefined;
  const match = /^\{"jsonrpc":"2\.0","id":(\d+),"method":/.exec(body);
  return match === null ? undefined : Number(match[1]);
}

/** JSON text with the requests in it marked for `posted` (or unmarked); other text as it is. */
function markedJson(text: string, posted: number | undefined): string {
  if (posted === undefined && !text.includes(POSTED_FOR)) return text;
  if (!text.includes('"method"')) return text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  const mark = (m: unknown): unknown => (isRequest(m) ? markedPostedFor(m, posted) : m);
  if (!Array.isArray(value)) {
    const marked = mark(value);
    return marked === value ? text : JSON.stringify(marked);
  }
  const marked = value.map(mark);
  return marked.every((m, i) => m === value[i]) ? text : JSON.stringify(marked);
}

function isRequest(m: unknown): m is JsonRpcRequest {
  if (typeof m !== 'object' || m === null) return false;
  const { method, id } = m as { method?: unknown; id?: unknown };
  return typeof method === 'string' && (typeof id === 'string' || typeof id === 'number');
}

/**
 * Rewrites an SSE stream event by event: an event whose data is a request gets the mark (its
 * data then goes as one line); every other line passes as it came. Lines end in CRLF, LF or CR.
 */
function sseMarker(posted: number | undefined): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let pending = '';
  let event: string[] = [];
  const lines = (text: string, controller: TransformStreamDefaultController<Uint8Array>, end: boolean) => {
    pending += text;
    // A CR at the end may be the first half of a CRLF: it waits for the next chunk.
    const cut = !end && pending.endsWith('\r') ? pending.length - 1 : pending.length;
    const parts = pending.slice(0, cut).split(/\r\n|\r|\n/);
    pending = (end ? '' : parts.pop()!) + pending.slice(cut);
    let out = '';
    for (const line of parts) {
      if (line !== '') {
        event.push(line);
        continue;
      }
      out += `${eventText(event, posted)}\n`;
      event = [];
    }
    if (end && event.length > 0) out += eventText(event, posted);
    if (out !== '') controller.enqueue(encoder.encode(out));
  };
  return new TransformStream({
    transform: (chunk, controller) => lines(decoder.decode(chunk, { stream: true }), controller, false),
    flush: (controller) => lines(decoder.decode(), controller, true),
  });
}

/** One event's lines as text (each ending in LF), its data marked when it is a request. */
function eventText(lines: readonly string[], posted: number | undefined): string {
  const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(l.startsWith('data: ') ? 6 : 5));
  const joined = data.join('\n');
  const marked = data.length === 0 ? joined : markedJson(joined, posted);
  if (marked === joined) return lines.map((l) => `${l}\n`).join('');
  const others = lines.filter((l) => !l.startsWith('data:'));
  return [...others, `data: ${marked}`].map((l) => `${l}\n`).join('');
}
