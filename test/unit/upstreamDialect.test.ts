import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { UpstreamRpcError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/logger.js';
import { META } from '../../src/core/protocol/envelope.js';
import type { Params } from '../../src/core/protocol/jsonRpc.js';
import type { RpcPeer } from '../../src/core/rpc/peer.js';
import type { MessageTransport } from '../../src/core/rpc/transport.js';
import { Handshake } from '../../src/core/upstreams/handshake.js';
import type { UpstreamDialect } from '../../src/core/upstreams/upstreamDialect.js';

/*
 * The handshake learns a server's era and hands back the dialect the rest of the upstream speaks
 * through: these pin what each dialect sends, over a peer that records it.
 */

const quiet = { error() {}, warn() {}, info() {}, debug() {}, child: () => quiet } as unknown as Logger;
const { config } = parseConfigText('servers:\n  s: { command: ./server }\n', {
  file: '/tmp/c.yaml',
  env: {},
});
const server = config.servers[0]!;

type Answer = (params: Params | undefined) => Record<string, unknown>;

/** A peer whose server answers from `answers`, refusing any other method with -32601. */
function scriptedPeer(answers: Record<string, Answer>) {
  const sent: { method: string; params: Params | undefined }[] = [];
  const request = (method: string, params: Params | undefined) => {
    sent.push({ method, params });
    const answer = answers[method];
    if (answer === undefined)
      return Promise.reject(new UpstreamRpcError('s', -32601, `Method not found: ${method}`));
    return Promise.resolve(answer(params));
  };
  const peer = { request, notify: (method: string) => sent.push({ method, params: undefined }) };
  return { peer: peer as unknown as RpcPeer, sent };
}

function handshake(prefersModern: boolean) {
  return new Handshake({
    config: server,
    gateway: config.gateway,
    log: quiet,
    clientInfo: { name: 'warden', version: '1' },
    clientCapabilities: () => ({ sampling: {} }),
    prefersModern: () => prefersModern,
  });
}

function subject(peer: RpcPeer, known?: UpstreamDialect) {
  return {
    session: peer,
    transport: {} as MessageTransport,
    what: 'command: ./server',
    known,
    memory: { logLevel: undefined },
  };
}

const modernServer: Record<string, Answer> = {
  'server/discover': () => ({
    supportedVersions: ['2026-07-28'],
    capabilities: { tools: {} },
    _meta: { [META.serverInfo]: { name: 'modern', version: '2' } },
  }),
  'tools/list': () => ({ tools: [] }),
};

const legacyServer: Record<string, Answer> = {
  initialize: () => ({
    protocolVersion: '2025-06-18',
    capabilities: { tools: {} },
    serverInfo: { name: 'legacy', version: '1' },
  }),
  'tools/list': () => ({ tools: [] }),
};

describe('the handshake and the dialect it returns', () => {
  it('speaks to a server that answers server/discover with the envelope, the log level riding on each request', async () => {
    const { peer, sent } = scriptedPeer(modernServer);
    const spoken = await handshake(true).run(subject(peer));
    expect(spoken).toMatchObject({
      protocolVersion: '2026-07-28',
      serverInfo: { name: 'modern', version: '2' },
    });
    await spoken.dialect.request('logging/setLevel', { level: 'debug' });
    await spoken.dialect.request('tools/list', undefined);
    expect(sent.map((m) => m.method)).toEqual(['server/discover', 'tools/list']);
    const meta = sent[1]!.params?._meta as Params;
    expect(meta[META.protocolVersion]).toBe('2026-07-28');
    expect(meta[META.logLevel]).toBe('debug');
    expect(meta[META.clientCapabilities]).toEqual({ sampling: {} });
  });

  it('initializes a server that refuses the probe, and never sends it a modern host’s envelope keys', async () => {
    const { peer, sent } = scriptedPeer(legacyServer);
    const spoken = await handshake(true).run(subject(peer));
    expect(spoken).toMatchObject({
      protocolVersion: '2025-06-18',
      serverInfo: { name: 'legacy', version: '1' },
    });
    expect(sent.map((m) => m.method)).toEqual(['server/discover', 'initialize', 'notifications/initialized']);
    await spoken.dialect.request('tools/list', {
      _meta: { [META.protocolVersion]: '2026-07-28', progressToken: 7 },
    });
    expect(sent.at(-1)).toEqual({ method: 'tools/list', params: { _meta: { progressToken: 7 } } });
  });

  it('initializes a server known legacy from its last connection at once, without probing it', async () => {
    const first = scriptedPeer(legacyServer);
    const { dialect } = await handshake(true).run(subject(first.peer));
    const again = scriptedPeer(legacyServer);
    await handshake(true).run(subject(again.peer, dialect));
    expect(again.sent.map((m) => m.method)).toEqual(['initialize', 'notifications/initialized']);
  });

  it('answers a subscribe to a modern server by opening its update stream, not with resources/subscribe', async () => {
    const { peer, sent } = scriptedPeer(modernServer);
    const { dialect } = await handshake(true).run(subject(peer));
    const subscribed = dialect.requestOutcome('resources/subscribe', { uri: 'file:///a' }, {});
    await Promise.resolve();
    expect(sent.at(-1)?.method).toBe('subscriptions/listen');
    expect(sent.at(-1)?.params).toMatchObject({ notifications: { resourceSubscriptions: ['file:///a'] } });
    void subscribed.catch(() => {});
  });
});
