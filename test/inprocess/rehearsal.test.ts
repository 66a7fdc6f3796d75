/**
 * The call path rehearsal (src/gateway/rehearsal.ts) in-process: it runs its four calls through
 * a gateway of its own, stops before its next step once the real gateway waits for no server, and
 * leaves no timer or handle that would keep the process alive.
 */
import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../src/features/audit/redact.js';
import { parseConfigText } from '../../src/config/load.js';
import { rehearsalConfigText, rehearseCallPath } from '../../src/gateway/rehearsal.js';
import { memoryLogger } from './harness.js';

/** The kinds of handle the process holds now, counted (timers, sockets, pipes). */
function handles(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

/** The harness's logger, keeping debug lines too: the rehearsal reports at debug only. */
function debugLogger(): ReturnType<typeof memoryLogger> {
  const logger = memoryLogger();
  return { ...logger, debug: (line: string) => void logger.lines.push(`debug: ${line}`) };
}

describe('rehearseCallPath', () => {
  it('makes its four calls while the servers start, and leaves nothing that keeps the process alive', async () => {
    const before = handles();
    const logger = debugLogger();
    await rehearseCallPath({
      version: 'test',
      redactor: createRedactor({ secretKeys: ['token'], secretPatterns: [] }),
      audit: true,
      waiting: () => true,
      logger,
    });
    expect(logger.lines.join('\n')).toMatch(/debug: call path rehearsed \(4 of 4 calls\) in [0-9.]+ ms/);
    // No timer or handle that holds the event loop (what would keep a gateway from exiting).
    await new Promise((resolve) => setImmediate(resolve));
    // (No more of any kind than before: the test runner's own may have ended meanwhile.)
    const after = handles();
    for (const [kind, count] of after)
      expect({ kind, count }).toEqual({ kind, count: Math.min(count, before.get(kind) ?? 0) });
  });

  it('takes no step when the gateway is not waiting for a server: a host may be calling', async () => {
    const logger = debugLogger();
    await rehearseCallPath({
      version: 'test',
      redactor: createRedactor({}),
      audit: false,
      waiting: () => false,
      logger,
    });
    expect(logger.lines.join('\n')).toMatch(/call path rehearsed \(0 of 4 calls\)/);
  });

  it('stops between calls when the servers come up meanwhile', async () => {
    const logger = debugLogger();
    let up = false;
    // The servers come up during the first call: its arguments are being audited.
    const redactor = createRedactor({});
    const watching = {
      ...redactor,
      redactValue: (value: unknown) => {
        up = true;
        return redactor.redactValue(value);
      },
    };
    await rehearseCallPath({
      version: 'test',
      redactor: watching,
      audit: true,
      waiting: () => !up,
      logger,
    });
    expect(logger.lines.join('\n')).toMatch(/call path rehearsed \(1 of 4 calls\)/);
  });

  it('gives its gateway a config the config schema finds valid, though it is not checked when used', () => {
    for (const audit of [false, true]) {
      const { config, warnings } = parseConfigText(rehearsalConfigText({ audit }), {
        file: '/rehearsal.json',
        env: {},
      });
      expect(warnings).toEqual([]);
      expect(config.servers.map((server) => server.name)).toEqual(['rehearsal']);
      expect(config.audit !== undefined).toBe(audit);
    }
  });
});
