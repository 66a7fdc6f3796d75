/** Audit events the unit tests of the trail write. */
import type { CallEvent } from '../../src/core/events.js';

/** A `call` record of a read of `/tmp/<n>` that took `n` ms, with `extra` over it. */
export function callEvent(n: number, extra: Partial<CallEvent> = {}): CallEvent {
  return {
    type: 'call',
    session: 's1',
    client: { name: 'test-host', version: '1.0.0' },
    tool: 'fs__read',
    server: 'fs',
    upstreamTool: 'read',
    args: { path: `/tmp/${n}` },
    decision: { effect: 'allow', rule: null },
    outcome: 'ok',
    ms: n,
    repairs: [],
    resultBytes: 10,
    ...extra,
  };
}
