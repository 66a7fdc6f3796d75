import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/logger.js';
import { quietStreams } from '../../src/http/answerStream.js';
import { RelayedStreams, type RelayedSession } from '../../src/http/relayedStreams.js';
import { eventIdOf } from '../../src/http/resumableCalls.js';
import type { RelayedRetry, Reply } from '../../src/http/retryRelay.js';
import { SessionTransport } from '../../src/http/sessionTransport.js';

const OWNER = 'token\u0000https://idp\u0000alice';

/** A relayed reply that keeps what was written on it. */
function reply(): Reply & { status: number | undefined; ended: boolean } {
  return {
    status: undefined,
    ended: false,
    writableEnded: false,
    destroyed: false,
    writeHead(status: number) {
      this.status = status;
      return this;
    },
    write: () => true,
    end() {
      this.ended = true;
      return this;
    },
    once: () => undefined,
  };
}

/**
 * Relayed streams served over one session of this replica, whose transport is a real session
 * transport without resumption (no store), open or closed; `warnings`: what was logged.
 */
async function streams(options: { closed: boolean }) {
  const warnings: string[] = [];
  const logger = { warn: (m: string) => void warnings.push(m) } as unknown as Logger;
  const transport = new SessionTransport({
    sessionId: () => 'session-1',
    onInitialized: () => {},
    onDeleted: () => {},
    quietStreams: quietStreams(),
  });
  if (options.closed) await transport.close();
  const session: RelayedSession = { owner: OWNER, lastSeen: 0, transport };
  const recorded: unknown[] = [];
  const relayed = new RelayedStreams({
    logger,
    session: (id) => (id === 'session-1' ? session : undefined),
    record: (event) => void recorded.push(event),
  });
  return { relayed, warnings, recorded };
}

const request = (lastEventId: string): RelayedRetry => ({
  from: 'replica-b',
  principal: OWNER,
  body: { session: 'session-1', lastEventId },
  headers: {},
  stream: true,
});

const LAST_EVENT_ID = eventIdOf({ replica: 'replica-a', auditSession: 'audit-a', requestId: 3, position: 2 });

describe('a resumed stream another replica relays to the session’s own replica', () => {
  it('is refused with 404 and a warning naming why when the session is closing', async () => {
    const { relayed, warnings, recorded } = await streams({ closed: true });
    const out = reply();
    relayed.serve(request(LAST_EVENT_ID), out);
    expect([out.status, out.ended]).toEqual([404, true]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /replica "replica-b" relayed a resumed stream of session "session-1…".*refused with 404, session closing/,
    );
    // Not a disagreement about who owns it: nothing to audit.
    expect(recorded).toEqual([]);
  });

  it('is refused with 404 and a warning naming why when the session’s calls are not resumable here', async () => {
    const { relayed, warnings } = await streams({ closed: false });
    const out = reply();
    relayed.serve(request(LAST_EVENT_ID), out);
    expect([out.status, out.ended]).toEqual([404, true]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/refused with 404, not resumable$/);
  });

  it('still refuses a Last-Event-ID that is not one of ours before asking the session', async () => {
    const { relayed, warnings } = await streams({ closed: false });
    const out = reply();
    relayed.serve(request('42'), out);
    expect(out.status).toBe(404);
    expect(warnings[0]).toMatch(/refused with 404, bad lastEventId$/);
  });
});
