import { describe, expect, it } from 'vitest';
import { limitedFetch, type HttpOversize } from '../../src/core/transports/httpLimits.js';

/** A fetch answering with `chunks` as the body, of the given content type. */
function fakeFetch(type: string, chunks: string[]): typeof fetch {
  return async () =>
    new Response(
      new ReadableStream({
        start(controller) {
          for (const chunk of chunks) controller.enqueue(new TextEncoder().encode(chunk));
          controller.close();
        },
      }),
      { status: 200, headers: { 'content-type': type } },
    );
}

async function read(type: string, chunks: string[], limit: number) {
  const cut: HttpOversize[] = [];
  const f = limitedFetch({
    maxMessageBytes: limit,
    onOversize: (i) => cut.push(i),
    fetch: fakeFetch(type, chunks),
  });
  const response = await f('http://127.0.0.1/mcp', {
    method: 'POST',
    body: '{"jsonrpc":"2.0","id":7,"method":"x"}',
  });
  const text = await response.text().catch((error: Error) => `error: ${error.message}`);
  return { text, cut };
}

describe('limitedFetch', () => {
  it('passes a JSON body within the limit, and cuts one over it naming the request', async () => {
    expect(await read('application/json', ['{"a":', '1}'], 10)).toEqual({ text: '{"a":1}', cut: [] });
    const over = await read('application/json', ['{"a":"', 'x'.repeat(20), '"}'], 10);
    expect(over.cut).toEqual([{ id: 7, what: 'response body', bytes: 26 }]);
    expect(over.text).toContain(
      'error: sent a response body over the limit of 10 bytes (gateway.maxMessageSize)',
    );
  });

  it.each([
    ['LF', '\n'],
    ['CRLF', '\r\n'],
    ['CR', '\r'],
  ])('bounds each SSE event, not the stream (%s line ends)', async (_name, eol) => {
    const event = `data: ${'x'.repeat(20)}${eol}${eol}`;
    // Many events, each within the limit, split across chunks anywhere.
    const stream = event.repeat(10);
    const chunks = [stream.slice(0, 7), stream.slice(7, 30), stream.slice(30)];
    expect(await read('text/event-stream', chunks, 40)).toEqual({ text: stream, cut: [] });
    // One event over it, though no line is.
    const big = `data: ${'y'.repeat(20)}${eol}data: ${'y'.repeat(20)}${eol}${eol}`;
    const over = await read('text/event-stream', [big], 40);
    expect(over.cut).toMatchObject([{ id: 7, what: 'SSE event' }]);
    expect(over.text).toContain('sent an SSE event over the limit of 40 bytes');
  });
});
