import { describe, expect, it, vi } from 'vitest';
import { UpstreamFailedError, UpstreamRpcError } from '../../src/core/errors.js';
import { Cancellation } from '../../src/core/rpc/cancellation.js';
import type { JsonRpcMessage } from '../../src/core/protocol/jsonRpc.js';
import { Outcome } from '../../src/core/rpc/outcome.js';
import { PROGRESS_CONFIRM_MS, RpcPeer, type IncomingRequest } from '../../src/core/rpc/peer.js';
import { ByteParts } from '../../src/lib/byteParts.js';
import { SENT, type MessageTransport, type OutgoingMessage } from '../../src/core/rpc/transport.js';
import { StreamTransport } from '../../src/core/transports/streamTransport.js';

/**
 * A transport that records what is sent and lets the test answer. `sendNeverRejects`: its sends
 * return `SENT`, as a stream transport's do, so the peer does not watch them.
 */
function fakeTransport(send: (message: OutgoingMessage) => Promise<void>, sendNeverRejects?: boolean) {
  const sent: JsonRpcMessage[] = [];
  const transport: MessageTransport = {
    start: async () => {},
    close: async () => {},
    send: (message) => {
      sent.push(message as JsonRpcMessage);
      const sending = send(message);
      return sendNeverRejects === true ? SENT : sending;
    },
  };
  const session = new RpcPeer({
    transport,
    errors: {
      remote: (e) => new UpstreamRpcError('up', e.code, e.message, e.data),
      failed: (detail, cause) => new UpstreamFailedError('up', detail, { cause }),
      cancelled: (reason) => new Error(reason),
    },
    onNotification: () => {},
    onRequest: () => {},
  });
  const answer = (message: JsonRpcMessage) => transport.onmessage!(message);
  return { session, sent, answer };
}

describe('RpcPeer, outgoing', () => {
  it.each([true, false])('answers a request by its id (sendNeverRejects %s)', async (never) => {
    const { session, sent, answer } = fakeTransport(async () => {}, never);
    const pending = session.request('tools/call', { name: 't' });
    expect(sent).toEqual([{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't' } }]);
    answer({ jsonrpc: '2.0', id: 1, result: { ok: true } });
    expect(await pending).toEqual({ ok: true });
    expect(session.inFlight).toBe(0);
  });

  it('fails a request the transport could not send, whether it rejects or throws', async () => {
    const rejecting = fakeTransport(() => Promise.reject(new Error('pipe closed')));
    await expect(rejecting.session.request('ping', undefined)).rejects.toThrow(UpstreamFailedError);
    expect(rejecting.session.inFlight).toBe(0);
    const throwing = fakeTransport(() => {
      throw new Error('cannot serialize');
    });
    const pending = throwing.session.request('ping', undefined);
    await expect(pending).rejects.toThrow('cannot send ping: cannot serialize');
    expect(throwing.session.inFlight).toBe(0);
  });

  it('on cancel tells the upstream, fails with the reason, and drops the late answer', async () => {
    const { session, sent, answer } = fakeTransport(async () => {}, true);
    const signal = new Cancellation();
    const progress: unknown[] = [];
    const pending = session.request(
      'tools/call',
      { name: 't' },
      { signal, onProgress: (p) => progress.push(p) },
    );
    expect(sent[0]).toMatchObject({ params: { name: 't', _meta: { progressToken: 1 } } });
    answer({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } });
    expect(progress).toEqual([{ progressToken: 1, progress: 1 }]);
    const reason = new Error('timed out');
    signal.cancel(reason);
    await expect(pending).rejects.toBe(reason);
    expect(sent[1]).toEqual({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 1, reason: 'timed out' },
    });
    answer({ jsonrpc: '2.0', id: 1, result: {} });
    expect(session.inFlight).toBe(0);
  });

  it("asks for progress under its own id, keeping the caller's params and _meta as they were", () => {
    const { session, sent } = fakeTransport(async () => {}, true);
    const params = { _meta: { trace: 'x' }, name: 't', arguments: { a: 1 } };
    void session.request('tools/call', params, { onProgress: () => {} });
    expect(JSON.stringify((sent[0] as { params: unknown }).params)).toBe(
      '{"_meta":{"trace":"x","progressToken":1},"name":"t","arguments":{"a":1}}',
    );
    expect(params).toEqual({ _meta: { trace: 'x' }, name: 't', arguments: { a: 1 } });
  });

  it('keeps a "__proto__" member of parsed params as a member when adding the token', () => {
    const { session, sent } = fakeTransport(async () => {}, true);
    const params = JSON.parse('{"name":"t","__proto__":{"x":1},"_meta":{"__proto__":{"y":2}}}') as Record<
      string,
      unknown
    >;
    void session.request('tools/call', params, { onProgress: () => {} });
    expect(JSON.stringify((sent[0] as { params: unknown }).params)).toBe(
      '{"name":"t","__proto__":{"x":1},"_meta":{"__proto__":{"y":2},"progressToken":1}}',
    );
  });

  it('stops listening to the signal once answered', async () => {
    const { session, sent, answer } = fakeTransport(async () => {}, true);
    const signal = new Cancellation();
    const pending = session.request('tools/call', { name: 't' }, { signal });
    answer({ jsonrpc: '2.0', id: 1, result: {} });
    await pending;
    signal.cancel(new Error('late'));
    expect(sent).toHaveLength(1);
  });
});

describe('RpcPeer, incoming', () => {
  /** A peer on a stream transport, as the host's connection is; `chunks` are the writes made. */
  async function hostPeer(onRequest: (request: IncomingRequest) => void, confirmsProgress?: boolean) {
    const { PassThrough } = await import('node:stream');
    const input = new PassThrough();
    const output = new PassThrough();
    const chunks: string[] = [];
    output.on('data', (chunk: Buffer) => chunks.push(chunk.toString()));
    const transport = new StreamTransport({
      input,
      output,
      maxLineBytes: 1 << 20,
      onJunk: () => {},
      onOversize: () => {},
    });
    new RpcPeer({
      transport,
      errors: {
        remote: (e) => new Error(e.message),
        failed: (detail) => new Error(detail),
        cancelled: (reason) => new Error(reason),
      },
      onRequest,
      onNotification: () => {},
      ...(confirmsProgress !== undefined && { confirmsProgress: () => confirmsProgress }),
    });
    await transport.start();
    return { input, chunks };
  }

  it("writes a request's last progress before its answer, never in the same write", async () => {
    const { input, chunks } = await hostPeer((request) => {
      request.onProgress!({ progress: 1, total: 2 });
      request.onProgress!({ progress: 2, total: 2 });
      request.respond(Outcome.of({ done: true }));
    });
    input.write('{"jsonrpc":"2.0","id":7,"method":"x","params":{"_meta":{"progressToken":"p"}}}\n');
    await vi.waitFor(() => expect(chunks.join('')).toContain('"done"'));
    const progressWrite = chunks.findIndex((c) => c.includes('"progress":2'));
    const answerWrite = chunks.findIndex((c) => c.includes('"done"'));
    expect(progressWrite).toBeGreaterThanOrEqual(0);
    expect(answerWrite).toBeGreaterThan(progressWrite);
    expect(chunks[answerWrite]).not.toContain('notifications/progress');
  });

  it('writes a result held as bytes from those bytes, never decoding them', async () => {
    const bytes = Buffer.from(JSON.stringify({ content: [{ type: 'text', text: 'x'.repeat(100_000) }] }));
    let decoded = 0;
    // What the pipeline hands back for an untouched large result: its value and its bytes, in
    // the parts they arrived in.
    const outcome = {
      result: { content: [] },
      raw: {
        bytes: new ByteParts([bytes.subarray(0, 65_536), bytes.subarray(65_536)]),
        get text() {
          decoded++;
          return bytes.toString('utf8');
        },
      },
    } as unknown as Outcome;
    const { input, chunks } = await hostPeer((request) => request.respond(outcome));
    input.write('{"jsonrpc":"2.0","id":1,"method":"x"}\n');
    await vi.waitFor(() => expect(chunks.join('')).toContain('\n'));
    expect(chunks.join('')).toBe(`{"jsonrpc":"2.0","id":1,"result":${bytes.toString('utf8')}}\n`);
    expect(decoded).toBe(0);
  });

  it('keeps unrelated answers of one turn in one write', async () => {
    const { input, chunks } = await hostPeer((request) => request.respond(Outcome.of({ n: request.id })));
    input.write('{"jsonrpc":"2.0","id":1,"method":"x"}\n{"jsonrpc":"2.0","id":2,"method":"x"}\n');
    await vi.waitFor(() => expect(chunks.join('')).toContain('"n":2'));
    expect(chunks).toHaveLength(1);
  });

  describe('where the host confirms progress', () => {
    /** Every message written so far, parsed. */
    const written = (chunks: string[]) =>
      chunks
        .join('')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>);

    it('holds an answer that follows progress until the host answers a ping sent after it', async () => {
      const { input, chunks } = await hostPeer((request) => {
        request.onProgress!({ progress: 1, total: 1 });
        if (request.id === 7) request.respond(Outcome.of({ done: true }));
        else request.fail({ code: -32000, message: 'no' });
      }, true);
      input.write('{"jsonrpc":"2.0","id":7,"method":"x","params":{"_meta":{"progressToken":"p"}}}\n');
      await vi.waitFor(() => expect(written(chunks).some((m) => m.method === 'ping')).toBe(true));
      input.write('{"jsonrpc":"2.0","id":8,"method":"x","params":{"_meta":{"progressToken":"q"}}}\n');
      await vi.waitFor(() => expect(written(chunks).filter((m) => m.method === 'ping')).toHaveLength(2));
      // The first ping came before the second request's progress, so it cannot confirm it.
      expect(written(chunks).some((m) => 'result' in m || 'error' in m)).toBe(false);
      const pings = written(chunks).filter((m) => m.method === 'ping');
      input.write(`{"jsonrpc":"2.0","id":${JSON.stringify(pings[0]!.id)},"result":{}}\n`);
      await vi.waitFor(() => expect(written(chunks).some((m) => m.id === 7)).toBe(true));
      expect(written(chunks).some((m) => m.id === 8)).toBe(false);
      input.write(
        `{"jsonrpc":"2.0","id":${JSON.stringify(pings[1]!.id)},"error":{"code":-32601,"message":"?"}}\n`,
      );
      await vi.waitFor(() => expect(written(chunks).some((m) => m.id === 8)).toBe(true));
      const order = written(chunks).map((m) => m.method ?? `answer ${String(m.id)}`);
      expect(order).toEqual([
        'notifications/progress',
        'ping',
        'notifications/progress',
        'ping',
        'answer 7',
        'answer 8',
      ]);
    });

    it('writes the answer anyway when the host never answers the ping', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      try {
        const { input, chunks } = await hostPeer((request) => {
          request.onProgress!({ progress: 1 });
          request.respond(Outcome.of({ done: true }));
        }, true);
        input.write('{"jsonrpc":"2.0","id":7,"method":"x","params":{"_meta":{"progressToken":"p"}}}\n');
        await vi.waitFor(() => expect(written(chunks).some((m) => m.method === 'ping')).toBe(true));
        expect(written(chunks).some((m) => m.id === 7)).toBe(false);
        await vi.advanceTimersByTimeAsync(PROGRESS_CONFIRM_MS + 100);
        await vi.waitFor(() => expect(written(chunks).some((m) => m.id === 7)).toBe(true));
      } finally {
        vi.useRealTimers();
      }
    });

    it('never waits on a host again once it let a ping go unanswered', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
      try {
        const { input, chunks } = await hostPeer((request) => {
          request.onProgress!({ progress: 1 });
          request.respond(Outcome.of({ n: request.id }));
        }, true);
        input.write('{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"progressToken":"p"}}}\n');
        await vi.waitFor(() => expect(written(chunks).some((m) => m.method === 'ping')).toBe(true));
        await vi.advanceTimersByTimeAsync(PROGRESS_CONFIRM_MS + 100);
        await vi.waitFor(() => expect(written(chunks).some((m) => m.id === 1)).toBe(true));
        // The next answers after progress go out at once, with no ping and no timer to run out.
        input.write('{"jsonrpc":"2.0","id":2,"method":"x","params":{"_meta":{"progressToken":"q"}}}\n');
        input.write('{"jsonrpc":"2.0","id":3,"method":"x","params":{"_meta":{"progressToken":"r"}}}\n');
        await vi.waitFor(() => expect(written(chunks).some((m) => m.id === 3)).toBe(true));
        expect(written(chunks).filter((m) => m.method === 'ping')).toHaveLength(1);
      } finally {
        vi.useRealTimers();
      }
    });

    it('keeps asking a host that refuses the ping, since a refusal confirms as well', async () => {
      const { input, chunks } = await hostPeer((request) => {
        request.onProgress!({ progress: 1 });
        request.respond(Outcome.of({ n: request.id }));
      }, true);
      for (const id of [1, 2]) {
        input.write(
          `{"jsonrpc":"2.0","id":${id},"method":"x","params":{"_meta":{"progressToken":"p${id}"}}}\n`,
        );
        await vi.waitFor(() => expect(written(chunks).filter((m) => m.method === 'ping')).toHaveLength(id));
        const ping = written(chunks).filter((m) => m.method === 'ping')[id - 1]!;
        input.write(
          `{"jsonrpc":"2.0","id":${JSON.stringify(ping.id)},"error":{"code":-32601,"message":"?"}}\n`,
        );
        await vi.waitFor(() => expect(written(chunks).some((m) => m.id === id)).toBe(true));
      }
    });

    it('answers without a ping when the request had no progress', async () => {
      const { input, chunks } = await hostPeer((request) => request.respond(Outcome.of({ n: 1 })), true);
      input.write('{"jsonrpc":"2.0","id":1,"method":"x","params":{"_meta":{"progressToken":"p"}}}\n');
      await vi.waitFor(() => expect(chunks.join('')).toContain('"n":1'));
      expect(written(chunks).map((m) => m.id)).toEqual([1]);
    });
  });
});
