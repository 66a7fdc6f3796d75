/**
 * The ping a gateway sends a host to confirm it has handled a call's progress before the answer
 * goes out (see test/integration/progressOrder.test.ts for why), when the host never answers it:
 * served in-process (test/inprocess/served.ts), raw lines over the gateway's stdio.
 */
import { describe, expect, it } from 'vitest';
import { FAST_GATEWAY, FIXTURE, initialize, NODE, textOf, writeConfig } from '../integration/harness.js';
import { servedPerTest } from './perTest.js';

describe('a host that never answers the gateway’s ping', () => {
  const each = servedPerTest();

  it('is waited on once, and every later answer after progress goes out without a ping', async () => {
    const s = await each.raw(
      writeConfig({ gateway: FAST_GATEWAY, servers: { up: { command: NODE, args: [FIXTURE] } } }),
    );
    // A host that can be asked things (it declares elicitation), yet ignores every request.
    await initialize(s, { elicitation: {} });
    const pings = (): number => s.lines.filter((line) => line.includes('"method":"ping"')).length;
    for (let id = 1; id <= 4; id += 1) {
      // String ids: the gateway's own requests to the host (its pings) are numbered.
      const answered = s.next((m) => m.id === `c${id}`);
      s.send(
        JSON.stringify({
          jsonrpc: '2.0',
          id: `c${id}`,
          method: 'tools/call',
          params: { name: 'up__progress', arguments: { steps: 2 }, _meta: { progressToken: `p${id}` } },
        }),
      );
      const answer = await answered;
      expect(textOf(answer.result as object)).toContain('done');
    }
    // The first answer waited for a ping that never came back; no later one asked again.
    expect(pings()).toBe(1);
  });
});
