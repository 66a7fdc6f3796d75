import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { parseRate } from '../../src/config/rateLimits.js';
import type { RateLimitRule } from '../../src/config/types.js';
import { RateLimitedError } from '../../src/core/errors.js';
import type { Next, RoutedMessage } from '../../src/core/pipeline/types.js';
import type { Principal } from '../../src/core/principal.js';
import { errorToWire, requestErrorToWire, PRINCIPAL_LIMIT_CODE } from '../../src/core/rpc/errorsToWire.js';
import { Outcome } from '../../src/core/rpc/outcome.js';
import { createRateLimitStage, type RateLimitRecord } from '../../src/features/limits/rateLimits.js';
import type { Logger } from '../../src/core/logger.js';
import { toolCall } from './toolCall.js';

const alice: Principal = { source: 'token', subject: 'alice', issuer: 'https://idp' };
const bob: Principal = { source: 'token', subject: 'bob', issuer: 'https://idp' };
const ok = Outcome.of({ content: [] });
const next: Next = () => Promise.resolve(ok);
const silent = { error() {}, warn() {}, info() {}, debug() {} } as unknown as Logger;

function call(principal: Principal | undefined, target = 'echo', server = 'up'): RoutedMessage {
  return toolCall({ principal, target, server });
}

function rule(over: Partial<RateLimitRule> & { rate: string }): RateLimitRule {
  const parsed = parseRate(over.rate)!;
  return { index: 0, per: 'principal', refillMs: parsed.perMs / parsed.count, burst: parsed.count, ...over };
}

function harness(rules: RateLimitRule[]) {
  let clock = 0;
  const records: RateLimitRecord[] = [];
  const stage = createRateLimitStage({ rules, record: (r) => records.push(r), now: () => clock });
  return {
    records,
    advance: (ms: number) => (clock += ms),
    run: (message: RoutedMessage) => stage(message, next),
  };
}

describe('rate limits', () => {
  it('lets a burst through, refuses the next with when to retry, and refills at the rate', async () => {
    const h = harness([rule({ rate: '6/minute', burst: 2 })]);
    await h.run(call(alice));
    await h.run(call(alice));
    const refused = h.run(call(alice));
    await expect(refused).rejects.toBeInstanceOf(RateLimitedError);
    await expect(refused).rejects.toThrow(
      'Rate limit reached for tool "echo" on server "up" (rateLimits[0]: 6/minute, burst 2, per principal). Try again in 10 s. The call was not run.',
    );
    h.advance(9_999);
    await expect(h.run(call(alice))).rejects.toThrow('Try again in 1 s');
    h.advance(1);
    await expect(h.run(call(alice))).resolves.toBe(ok);
  });

  it('keeps a bucket per principal, or one for everyone', async () => {
    const own = harness([rule({ rate: '1/hour' })]);
    await own.run(call(alice));
    await expect(own.run(call(bob))).resolves.toBe(ok);
    await expect(own.run(call(alice))).rejects.toBeInstanceOf(RateLimitedError);
    const shared = harness([rule({ rate: '1/hour', per: 'everyone' })]);
    await shared.run(call(alice));
    await expect(shared.run(call(bob))).rejects.toBeInstanceOf(RateLimitedError);
  });

  it('bounds only the servers and tools its globs match', async () => {
    const h = harness([rule({ rate: '1/hour', server: 'git*', tool: 'create_*' })]);
    await h.run(call(alice, 'create_issue', 'github'));
    await expect(h.run(call(alice, 'create_pr', 'github'))).rejects.toBeInstanceOf(RateLimitedError);
    await expect(h.run(call(alice, 'list_issues', 'github'))).resolves.toBe(ok);
    await expect(h.run(call(alice, 'create_issue', 'gitlab-not'))).rejects.toBeInstanceOf(RateLimitedError);
    await expect(h.run(call(alice, 'create_issue', 'other'))).resolves.toBe(ok);
  });

  it('gives back what earlier rules took when a later one refuses', async () => {
    const h = harness([rule({ rate: '2/hour', index: 0 }), rule({ rate: '1/hour', index: 1, tool: 'echo' })]);
    await h.run(call(alice, 'echo'));
    await expect(h.run(call(alice, 'echo'))).rejects.toBeInstanceOf(RateLimitedError);
    // Rule 0 still has its second token: the refused call did not spend it.
    await expect(h.run(call(alice, 'other'))).resolves.toBe(ok);
  });

  it('records a burst once when it begins and once when it ends, with the count', async () => {
    const h = harness([rule({ rate: '60/minute', burst: 1 })]);
    await h.run(call(alice));
    for (let i = 0; i < 5; i++) await h.run(call(alice)).catch(() => {});
    expect(h.records).toEqual([
      expect.objectContaining({
        type: 'rate_limited',
        phase: 'begin',
        rule: 0,
        server: 'up',
        tool: 'echo',
        principal: alice,
      }),
    ]);
    h.advance(1_000);
    await h.run(call(alice));
    expect(h.records).toHaveLength(2);
    expect(h.records[1]).toMatchObject({ phase: 'end', refused: 5, rate: '60/minute', burst: 1 });
  });

  it('is an isError result for a tool call and -32029 with data otherwise, with the seconds to wait', () => {
    const error = new RateLimitedError(0, 2_500, 'Rate limit reached. Try again in 3 s.');
    const wire = errorToWire(error, silent);
    expect(wire).toMatchObject({
      kind: 'result',
      result: { isError: true, _meta: { 'mcp-warden/error': 'RATE_LIMITED', 'mcp-warden/retryAfter': 3 } },
    });
    expect(requestErrorToWire(error, silent)).toMatchObject({
      code: PRINCIPAL_LIMIT_CODE,
      data: { 'mcp-warden/retryAfter': 3 },
    });
  });
});

const loadConfigText = (text: string, file: string) => parseConfigText(text, { file, env: {} }).config;

describe('rateLimits in the config', () => {
  it('reads rate and burst, defaulting the burst to the count', () => {
    const config = loadConfigText(
      'rateLimits:\n  - { server: github, tool: "create_*", rate: 30/minute }\n  - { rate: 5/s, burst: 10, per: everyone }\nservers:\n  github: { command: x }\n',
      '/tmp/c.yaml',
    );
    expect(config.rateLimits).toEqual([
      {
        index: 0,
        server: 'github',
        tool: 'create_*',
        per: 'principal',
        rate: '30/minute',
        refillMs: 2_000,
        burst: 30,
      },
      { index: 1, per: 'everyone', rate: '5/s', refillMs: 200, burst: 10 },
    ]);
  });

  it('refuses a rate it cannot read, or of zero, naming the line and key', () => {
    expect(() =>
      loadConfigText('rateLimits:\n  - { rate: fast }\nservers:\n  a: { command: x }\n', '/tmp/c.yaml'),
    ).toThrow(/c\.yaml:2.*rateLimits\[0\]\.rate/s);
    expect(() =>
      loadConfigText('rateLimits:\n  - { rate: 0/minute }\nservers:\n  a: { command: x }\n', '/tmp/c.yaml'),
    ).toThrow(/rateLimits\[0\]\.rate.*at least one call/s);
  });
});
