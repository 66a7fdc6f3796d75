import { describe, expect, it } from 'vitest';
import type { RpcPeer } from '../../src/core/rpc/peer.js';
import { InitializedHostSession } from '../../src/core/host/hostSession.js';
import { gatewayCapabilities, type UpstreamFacts } from '../../src/core/host/initializeAnswer.js';

function upstream(name: string, capabilities: Record<string, unknown>): UpstreamFacts {
  return {
    name,
    config: { namespace: null, instructions: true, disabled: false },
    state: 'ready',
    capabilities,
    instructions: undefined,
  };
}

describe('the tasks capability', () => {
  it('is declared when some upstream declares it, merged', () => {
    expect(gatewayCapabilities([upstream('a', { tools: {} })])).not.toHaveProperty('tasks');
    const merged = gatewayCapabilities([
      upstream('a', { tasks: { list: {}, requests: { tools: { call: {} } } } }),
      upstream('b', {
        tasks: { cancel: {}, requests: JSON.parse('{"__proto__":{"x":{}},"other":{"run":{}}}') as object },
      }),
      upstream('c', { tools: {} }),
    ]);
    expect(merged.tasks).toEqual({
      list: {},
      cancel: {},
      requests: { tools: { call: {} }, other: { run: {} } },
    });
  });

  it("passes the host's task support on for the requests a server may make, with list and cancel", () => {
    const session = new InitializedHostSession({} as RpcPeer);
    session.initialized(
      {
        capabilities: {
          sampling: {},
          elicitation: {},
          tasks: {
            list: {},
            cancel: {},
            requests: { sampling: { createMessage: {} }, elicitation: { create: {} } },
          },
        },
      },
      '2025-11-25',
    );
    const all = { sampling: true, elicitation: true, roots: true } as const;
    expect(session.capabilitiesFor(all).tasks).toEqual({
      cancel: {},
      list: {},
      requests: { sampling: { createMessage: {} }, elicitation: { create: {} } },
    });
    // A server that may not sample is not told the host samples as a task either.
    expect(session.capabilitiesFor({ ...all, sampling: false }).tasks).toEqual({
      cancel: {},
      list: {},
      requests: { elicitation: { create: {} } },
    });
    expect(session.capabilitiesFor({ ...all, sampling: false, elicitation: false })).not.toHaveProperty(
      'tasks',
    );
  });
});
