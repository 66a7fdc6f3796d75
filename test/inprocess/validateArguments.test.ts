/**
 * Input validation switched off, in-process, with the SDK Client as host and the real
 * server-everything as upstream over memory: the call reaches the upstream, which answers for
 * itself. Validation on, served as the binary serves it: test/inprocess/validateArgumentsServed.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { textOf } from '../integration/harness.js';
import { everything, stopEverything } from './everything.js';
import type { InProcessGateway } from './harness.js';
import { servedPerTest } from './perTest.js';

let running: InProcessGateway | undefined;
afterEach(async () => {
  stopEverything();
});
const each = servedPerTest();

describe('arguments validated against the tool’s inputSchema', () => {
  it('with validateArguments: false, the call reaches the upstream as before, which answers for itself', async () => {
    running = await each.inProcess({
      config:
        'audit: { file: ./audit.jsonl }\nservers:\n  everything: { command: unused, validateArguments: false }\n',
      upstreams: { everything },
    });
    const result = await running.client.callTool({
      name: 'everything__get-sum',
      arguments: { a: '1000', b: 1 },
    });
    expect(result.isError).toBe(true);
    // The upstream's own answer, not the gateway's.
    expect(textOf(result)).not.toContain('[mcp-warden]');
    expect(result._meta?.['mcp-warden/error']).toBeUndefined();
    expect(textOf(result)).toMatch(/expected number, received string/i);
    const calls = running.auditRecords().filter((r) => r.type === 'call');
    expect(calls.map((c) => c.outcome)).toEqual(['tool_error']);
    expect(calls[0]!.resultBytes).toBeGreaterThan(0);
  });
});
