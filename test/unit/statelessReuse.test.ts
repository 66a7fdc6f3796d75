import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/logger.js';
import type { Principal } from '../../src/core/principal.js';
import type { JsonRpcMessage } from '../../src/core/protocol/jsonRpc.js';
import type { MessageTransport } from '../../src/core/rpc/transport.js';
import { createStatelessDispatch } from '../../src/http/stateless.js';

const VERSION = '2026-07-28';
const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} } as unknown as Logger;

/**
 * The stateless dispatch behind a real HTTP server, with connections that answer each request
 * with their own number: which connection served a request is what the answer says. A request
 * whose method is `hold` is answered only when `release()` is called.
 */
async function serve() {
  let made = 0;
  const closed: number[] = [];
  const held: (() => void)[] = [];
  const dispatch = createStatelessDispatch({
    logger: quiet,
    connect: (transport: MessageTransport) => {
      const number = ++made;
      transport.onmessage = (message: JsonRpcMessage) => {
        if (!('id' in message) || !('method' in message)) return;
        const answer = () =>
          void transport.send({ jsonrpc: '2.0', id: message.id, result: { connection: number } });
        if (message.method === 'hold') held.push(answer);
        else answer();
      };
      return {
        beforeWrite: () => {},
        continuesCall: () => false,
        noteContinuedVia: () => {},
        retryWindowMs: () => undefined,
        toolInputSchema: () => undefined,
        close: async () => void closed.push(number),
      };
    },
  });
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => {
      const principal = JSON.parse(String(req.headers['x-principal'])) as Principal;
      void dispatch.serve({ req, res, body: JSON.parse(text), principal });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  let id = 0;

  /** One request of `principal`, its response as it came. */
  async function post(
    principal: Principal,
    options: { method?: string; client?: string; envelope?: boolean } = {},
  ): Promise<Response> {
    const method = options.method ?? 'ping';
    const meta = {
      'io.modelcontextprotocol/protocolVersion': VERSION,
      'io.modelcontextprotocol/clientCapabilities': {},
      'io.modelcontextprotocol/clientInfo': { name: options.client ?? 'host', version: '1' },
    };
    const enveloped = options.envelope ?? true;
    return fetch(url, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json',
        'X-Principal': JSON.stringify(principal),
        'Mcp-Method': method,
        ...(enveloped && { 'Mcp-Protocol-Version': VERSION }),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: ++id,
        method,
        params: enveloped ? { _meta: meta } : {},
      }),
    });
  }

  /** One request of `principal`; resolves with the number of the connection that answered it. */
  async function call(principal: Principal, options: Parameters<typeof post>[1] = {}): Promise<number> {
    const answer = (await (await post(principal, options)).json()) as { result: { connection: number } };
    return answer.result.connection;
  }

  return {
    dispatch,
    post,
    call,
    made: () => made,
    closed,
    release: () => held.splice(0).forEach((answer) => answer()),
    held: () => held.length,
  };
}

const servers: Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

const alice: Principal = { source: 'token', subject: 'alice', issuer: 'https://idp' };
const bob: Principal = { source: 'token', subject: 'bob', issuer: 'https://idp' };

describe('stateless requests reuse an answered connection', () => {
  it('serves one principal’s requests one after another on one connection', async () => {
    const gateway = await serve();
    expect([await gateway.call(alice), await gateway.call(alice), await gateway.call(alice)]).toEqual([
      1, 1, 1,
    ]);
    expect(gateway.made()).toBe(1);
    expect(gateway.closed).toEqual([]);
  });

  it('never shares a connection between principals, claims, or client identities', async () => {
    const gateway = await serve();
    const admin: Principal = { ...alice, claims: { groups: ['admin'] } };
    const guest: Principal = { ...alice, claims: { groups: ['guest'] } };
    const seen = [
      await gateway.call(alice),
      await gateway.call(bob),
      await gateway.call(admin),
      await gateway.call(guest),
      await gateway.call(alice, { client: 'other-host' }),
    ];
    expect(seen).toEqual([1, 2, 3, 4, 5]);
    // Each is then found again by the same request.
    expect(await gateway.call(bob)).toBe(2);
    expect(await gateway.call(guest)).toBe(4);
  });

  it('gives a request that arrives while the connection serves another a connection of its own', async () => {
    const gateway = await serve();
    const first = gateway.call(alice, { method: 'hold' });
    await expect.poll(() => gateway.held()).toBe(1);
    expect(await gateway.call(alice)).toBe(2);
    gateway.release();
    expect(await first).toBe(1);
  });

  it('closes the connection of a request without the envelope instead of keeping it', async () => {
    const gateway = await serve();
    expect(await gateway.call(alice, { envelope: false })).toBe(1);
    await expect.poll(() => gateway.closed).toEqual([1]);
    expect(await gateway.call(alice, { envelope: false })).toBe(2);
    expect(await gateway.call(alice)).toBe(3);
  });
});

describe('the stateless dispatch as the listener stops', () => {
  it('keeps no connection once the listener stops accepting: those kept are closed, and each answered one after', async () => {
    const gateway = await serve();
    expect(await gateway.call(alice)).toBe(1);
    expect(gateway.closed).toEqual([]);
    gateway.dispatch.stopAccepting();
    expect(gateway.closed).toEqual([1]);
    // A request already on its way is still served, on a connection of its own, closed after.
    expect(await gateway.call(alice)).toBe(2);
    await expect.poll(() => gateway.closed).toEqual([1, 2]);
  });

  it('closes what it keeps once closed, and refuses a request that comes after with 503, making no connection', async () => {
    const gateway = await serve();
    expect(await gateway.call(alice)).toBe(1);
    await gateway.dispatch.close();
    expect(gateway.closed).toEqual([1]);
    const refused = await gateway.post(alice);
    expect(refused.status).toBe(503);
    const answer = (await refused.json()) as { id: unknown; error: { code: number; message: string } };
    expect(answer.id).toBe(2);
    expect(answer.error.message).toContain('mcp-warden is shutting down');
    expect(gateway.made()).toBe(1);
  });

  it('closes the connection of a request answered after it closed, rather than keeping it', async () => {
    const gateway = await serve();
    const held = gateway.call(alice, { method: 'hold' });
    await expect.poll(() => gateway.held()).toBe(1);
    await gateway.dispatch.close();
    expect(gateway.closed).toEqual([]);
    gateway.release();
    expect(await held).toBe(1);
    await expect.poll(() => gateway.closed).toEqual([1]);
  });
});
