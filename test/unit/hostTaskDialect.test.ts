import { describe, expect, it } from 'vitest';
import { LegacyHostDialect, ModernHostDialect } from '../../src/core/host/hostDialect.js';
import type { InitializedHostSession } from '../../src/core/host/hostSession.js';
import type { ModernHost } from '../../src/core/host/modernHost.js';
import type { RpcPeer } from '../../src/core/rpc/peer.js';

const legacy = new LegacyHostDialect({} as InitializedHostSession, {} as RpcPeer).tasks;
const modern = new ModernHostDialect({} as ModernHost).tasks;

describe("the host dialect's task part", () => {
  it('serves each pairing of eras one way: passed on, relayed, or translated', () => {
    expect(['legacy', 'modern', undefined].map((era) => legacy.translation(era as never))).toEqual([
      'passOn',
      'pollForResult',
      'passOn',
    ]);
    // A server not connected yet is taken for a handshake-era one, as before it was probed.
    expect(['legacy', 'modern', undefined].map((era) => modern.translation(era as never))).toEqual([
      'holdResult',
      'relayQuestions',
      'holdResult',
    ]);
  });

  it('answers a created task in the host’s shape, under the handle', () => {
    const flat = { taskId: 'up', status: 'working', ttlMs: 5000, pollIntervalMs: 20, createdAt: 'c' };
    expect(legacy.created({ _meta: { m: 1 } }, flat, 'h', true)).toEqual({
      _meta: { m: 1 },
      task: { taskId: 'h', status: 'working', ttl: 5000, pollInterval: 20, createdAt: 'c' },
    });
    const wrapped = { taskId: 'up', status: 'working', ttl: null, createdAt: 'c' };
    expect(modern.created({ task: wrapped }, wrapped, 'h', false)).toEqual({
      resultType: 'task',
      taskId: 'h',
      status: 'working',
      ttlMs: null,
      createdAt: 'c',
    });
    // Only a host that hears statuses on its connection has them watched from creation on.
    expect([legacy.watchOnCreation, modern.watchOnCreation]).toEqual([true, false]);
  });
});
