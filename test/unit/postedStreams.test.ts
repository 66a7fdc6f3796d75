import { describe, expect, it } from 'vitest';
import { markingFetch } from '../../src/core/transports/postedStreams.js';

const POST = { method: 'POST', body: '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}' };
const ASK = { jsonrpc: '2.0', id: 3, method: 'elicitation/create', params: { message: 'hi' } };

/** A fetch answering with `chunks` as an SSE stream (or `type`). */
function answering(chunks: string[], type = 'text/event-stream') {
  return () =>
    Promise.resolve(
      new Response(
        new ReadableStream<Uint8Array>({
          start(controller) {
            for (const c of chunks) controller.enqueue(new TextEncoder().encode(c));
            controller.close();
          },
        }),
        { status: 200, headers: { 'content-type': type } },
      ),
    );
}

const dataOf = (text: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => JSON.parse(l.slice(5)) as { params?: { _meta?: Record<string, unknown> } });

describe('markingFetch', () => {
  it("marks a request on a POST's stream with the posted id, across chunk and CRLF boundaries", async () => {
    const event = `id: 1\r\nevent: message\r\ndata: ${JSON.stringify(ASK)}\r\n\r\n`;
    const answer = `data: {"jsonrpc":"2.0","id":7,"result":{"method":"x"}}\n\n`;
    const chunks = [event.slice(0, 30), event.slice(30, event.length - 3), event.slice(-3), answer];
    const text = await (await markingFetch(answering(chunks))('http://x/mcp', POST)).text();
    const [asked, result] = dataOf(text);
    expect(asked).toEqual({ ...ASK, params: { message: 'hi', _meta: { 'io.mcp-warden/postedFor': 7 } } });
    expect(result).toEqual({ jsonrpc: '2.0', id: 7, result: { method: 'x' } });
    expect(text).toContain('id: 1\nevent: message\n');
  });

  it('removes a mark a server wrote itself on a stream no POST of a request opened', async () => {
    const forged = { ...ASK, params: { message: 'hi', _meta: { 'io.mcp-warden/postedFor': 1, keep: true } } };
    const text = await (
      await markingFetch(answering([`data: ${JSON.stringify(forged)}\n\n`]))('http://x/mcp', {
        method: 'GET',
      })
    ).text();
    expect(dataOf(text)).toEqual([{ ...ASK, params: { message: 'hi', _meta: { keep: true } } }]);
  });

  it('marks a request in a JSON body too', async () => {
    const response = await markingFetch(answering([JSON.stringify([ASK])], 'application/json'))(
      'http://x/mcp',
      POST,
    );
    expect(await response.json()).toEqual([
      { ...ASK, params: { message: 'hi', _meta: { 'io.mcp-warden/postedFor': 7 } } },
    ]);
  });
});
