import { describe, expect, it } from 'vitest';
import { eventIdOf, positionOf } from '../../src/http/resumableCalls.js';

describe("the ids of events on a call's stream", () => {
  const at = { replica: 'Ab-c_12', auditSession: '3f9c0a1d-5e7b-4c48-9a2b-0c1d2e3f4a5b' };

  it('name the replica, its audit session, the request and the position, for any replica to read back', () => {
    for (const requestId of [7, 'call-1', 'with.dots and spaces', 0])
      for (const position of [0, 3, 'end'] as const)
        expect(positionOf(eventIdOf({ ...at, requestId, position }))).toEqual({ ...at, requestId, position });
  });

  it('are not taken from ids the gateway did not write', () => {
    const good = eventIdOf({ ...at, requestId: 1, position: 2 });
    for (const other of [
      '42',
      '',
      good.replace('mcpw1.', 'mcpw2.'),
      good.replace(/\.2$/, '.x'),
      // A request id that is not a string or an integer.
      `mcpw1.a.b.${Buffer.from('{"x":1}').toString('base64url')}.0`,
      `mcpw1.a.b.${Buffer.from('1.5').toString('base64url')}.0`,
      'mcpw1.a.b.!!!.0',
    ])
      expect(positionOf(other)).toBeUndefined();
  });
});
