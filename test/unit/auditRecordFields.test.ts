import { describe, expect, it, vi } from 'vitest';
import { canonicalJson } from '../../src/lib/canonicalJson.js';
import { CALL_KEYS, CALL_START_KEYS, RecordFields } from '../../src/features/audit/recordFields.js';
import { createRedactor, type Redactor } from '../../src/features/audit/redact.js';
import type { AuditLog } from '../../src/features/audit/auditWriter.js';
import { createAuditStage } from '../../src/features/audit/stage.js';
import type { AuditConfig } from '../../src/config/types.js';
import type { Logger } from '../../src/core/logger.js';
import type { RoutedMessage } from '../../src/core/pipeline/types.js';
import { Outcome } from '../../src/core/rpc/outcome.js';

/*
 * RecordFields.members writes a record's fields member by member, remembering what repeats.
 * Its text must be byte for byte what the writer wrote before it existed: the fields redacted
 * (args and structured with the full rule, the rest with the pattern rule), in a plain object,
 * through JSON.stringify, or canonicalJson when that throws. `reference` is that definition,
 * written out independently here.
 */

const RESERVED = new Set(['seq', 'ts', 'writer', 'prev', 'hash', '__proto__']);

function reference(event: object, redactor: Redactor | undefined): string {
  const fields: Record<string, unknown> = {};
  const source = event as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    if (RESERVED.has(key)) continue;
    const value = source[key];
    fields[key] =
      redactor === undefined
        ? value
        : key === 'args' || key === 'structured'
          ? redactor.redactValue(value)
          : redactor.redactStrings(value);
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(fields);
  } catch {
    json = undefined;
  }
  return (typeof json === 'string' ? json : canonicalJson(fields)).slice(1, -1);
}

const redactor = createRedactor({ secretKeys: ['pin'], secretPatterns: ['ACME-[0-9a-f]{8}'] });
const GITHUB = `ghp_${'a'.repeat(36)}`;

function call(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'call',
    session: 'a1b2c3',
    client: { name: 'host', version: '1.0' },
    tool: 'fs__read',
    server: 'fs',
    upstreamTool: 'read',
    args: { path: '/tmp/x' },
    decision: { effect: 'allow', rule: 'r1' },
    outcome: 'ok',
    ms: 1.234,
    repairs: [],
    resultBytes: 95,
    error: undefined,
    structured: undefined,
    ...overrides,
  };
}

/** Appends `events` in order to one RecordFields (so its memories are used) and compares each. */
function expectSame(events: readonly object[], with_: Redactor | undefined = redactor): void {
  const fields = new RecordFields(with_);
  for (const event of events) expect(fields.members(event)).toBe(reference(event, with_));
}

function cyclic(): Record<string, unknown> {
  const value: Record<string, unknown> = { a: 1 };
  value['self'] = value;
  return value;
}

/** Explicit odd values, each tried under every kind of field. */
const ODD_VALUES: readonly unknown[] = [
  undefined,
  null,
  true,
  false,
  0,
  -0,
  1e21,
  5e-324,
  0.1 + 0.2,
  -1.5,
  NaN,
  Infinity,
  -Infinity,
  '',
  'plain',
  'with "quotes" and \\ and \n and \u0001',
  'lone \ud800 surrogate and pair 😀',
  'ünïcödé',
  `token=${'x'.repeat(10)}`,
  `Bearer ${'y'.repeat(24)}`,
  GITHUB,
  'ACME-0123abcd',
  'x'.repeat(300),
  `${'x'.repeat(300)} ${GITHUB}`,
  12n,
  { big: 12n },
  () => 1,
  Symbol('s'),
  [],
  [1, 'two', null, undefined, () => 1],
  Object.assign([], { toJSON: () => 'array toJSON' }),
  { name: 'host', version: '1.0' },
  { name: GITHUB, version: '1.0' },
  { password: 'hunter2', pin: 1234, nested: { token: 'abc', keep: 'me' } },
  { toJSON: () => ({ replaced: true }) },
  { toJSON: 'a data member' },
  { toJSON: () => ({ toJSON: (key: string) => `key was ${key}` }) },
  new Date(0),
  new Error(`failed with ${GITHUB}`),
  new Map([['a', 1]]),
  Object.create(null) as object,
  Object.assign(Object.create(null) as object, { a: 'b' }),
  new (class Point {
    x = 1;
    y = 2;
  })(),
  cyclic(),
  {
    get boom(): never {
      throw new Error('getter');
    },
  },
  { flag: true, count: 3, none: null, gone: undefined },
  { '0': 'index', b: 'named', a: 'order' },
  Buffer.from('hi'),
];

describe('RecordFields.members', () => {
  it('writes a call record exactly as JSON.stringify of the redacted fields', () => {
    expectSame([call(), call(), call({ ms: 2 }), call()]);
    expect(new RecordFields(redactor).members(call())).toBe(
      '"type":"call","session":"a1b2c3","client":{"name":"host","version":"1.0"},"tool":"fs__read",' +
        '"server":"fs","upstreamTool":"read","args":{"path":"/tmp/x"},' +
        '"decision":{"effect":"allow","rule":"r1"},"outcome":"ok","ms":1.234,"repairs":[],"resultBytes":95',
    );
  });

  it('writes usual records the fast way, odd ones the general way', () => {
    const fields = new RecordFields(redactor);
    const general = vi.spyOn(fields, 'prepare');
    fields.members(call());
    fields.members(call({ args: { nested: [1, { a: GITHUB }] }, error: 'x', structured: { a: 1 } }));
    fields.members({ type: 'gateway_start', session: 's', version: '1', pid: 1 });
    expect(general).not.toHaveBeenCalled();
    fields.members(call({ args: { n: 1n } }));
    fields.members({ type: 'call', toJSON: () => 'x' });
    expect(general).toHaveBeenCalledTimes(2);
  });

  it('redacts secrets in every field as before', () => {
    const secretArgs = {
      path: '/x',
      password: 'hunter2',
      pin: 42,
      note: `use ${GITHUB}`,
      deep: [{ token: 't' }],
    };
    const events = [
      call({ args: secretArgs }),
      call({ error: `denied: ${GITHUB} and ACME-0123abcd` }),
      call({
        tool: `fs ${GITHUB}`,
        server: 'token=abcdefgh',
        upstreamTool: 'Bearer abcdefghijklmnopqrstuvwx',
      }),
      call({ client: { name: `host ${GITHUB}`, version: '1' } }),
      call({ decision: { effect: 'deny', rule: 'r2', reason: `because ACME-0123abcd` } }),
      call({ structured: { apiKey: 'k', text: GITHUB } }),
      call({ repairs: ['textForStructured', `odd ${GITHUB}`] }),
      call({ session: `${'s'.repeat(300)} ${GITHUB}` }),
    ];
    expectSame(events);
    const text = events.map((event) => new RecordFields(redactor).members(event)).join('\n');
    for (const secret of ['hunter2', GITHUB, 'ACME-0123abcd', 'abcdefghijklmnopqrstuvwx']) {
      expect(text).not.toContain(secret);
    }
  });

  it('does not reuse the text of a client or decision whose members changed', () => {
    const client = { name: 'host', version: '1.0' };
    const events = [call({ client }), call({ client })];
    client.version = '2.0'; // the same object, changed between two records
    events.push(call({ client }));
    events.push(call({ client: { version: '2.0', name: 'host' } })); // same members, other order
    events.push(call({ client: { name: 'host', version: '2.0', extra: 1 } }));
    events.push(call({ client: { name: 'host' } }));
    events.push(call({ decision: { effect: 'allow', rule: null } }));
    events.push(call({ decision: { effect: 'allow', rule: 'null' } }));
    events.push(call({ decision: { effect: 'allow', rule: 0 } }));
    events.push(call({ decision: { effect: 'allow', rule: -0 } }));
    events.push(call({ decision: { effect: 'allow', rule: '0' } }));
    events.push(call({ decision: { effect: 'confirm', rule: 'r1', how: 'elicitation', confirmed: true } }));
    events.push(call({ decision: { effect: 'confirm', rule: 'r1', how: 'elicitation', confirmed: false } }));
    events.push(call({ decision: { effect: 'allow', rule: 'r1', reason: GITHUB } }));
    events.push(call({ decision: { effect: 'allow', rule: 'r1', reason: GITHUB } }));
    for (const event of events) expectSame([event]);
    expectSame(events);
    // Reading the log in another order must not matter either.
    expectSame([...events].reverse());
  });

  it('matches for odd values under every field, in sequence and alone', () => {
    const fieldsOf = ['args', 'structured', 'client', 'decision', 'repairs', 'error', 'tool', 'ms', 'other'];
    const events: object[] = [];
    for (const key of fieldsOf) {
      for (const value of ODD_VALUES) events.push(call({ [key]: value }));
    }
    expectSame(events);
    expectSame(events, undefined);
    for (const event of events) {
      expectSame([event]);
      expectSame([event], undefined);
    }
  });

  it('matches for other shapes: reserved, numeric and toJSON fields, other kinds of records', () => {
    const events: object[] = [
      {},
      { type: 'gateway_start', session: 's', version: '1.0.0', pid: 42, config: '/etc/warden.json' },
      { type: 'gateway_stop', session: 's', reason: 'error', error: `crash ${GITHUB}`, uptimeMs: 3 },
      { type: 'config_load', session: 's', file: '/x', sha256: 'ab', servers: ['a', GITHUB] },
      { seq: 9, ts: 'then', writer: 'w', prev: 'p', hash: 'h', type: 'call' },
      { 2: 'two', 1: 'one', b: 'b', a: 'a' },
      { type: 'call', toJSON: () => 'whole record' },
      { type: 'call', toJSON: 'data' },
      JSON.parse('{"__proto__": {"polluted": true}, "type": "call"}') as object,
      Object.assign(Object.create({ inherited: 'no' }) as object, { own: 'yes' }),
    ];
    expectSame(events);
    expectSame(events, undefined);
  });

  it('never throws, whatever the values', () => {
    const fields = new RecordFields(redactor);
    for (const value of ODD_VALUES) {
      expect(() => fields.members({ type: 'call', args: value, client: value, error: value })).not.toThrow();
    }
  });

  it('matches on random records', () => {
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const strings = ['a', 'host', 'r1', GITHUB, 'token=abcdefgh', 'ACME-0123abcd', '"q"', '\ud83d', 'é'];
    const value = (depth: number): unknown => {
      const kind = random();
      if (depth > 2 || kind < 0.4) return pick<unknown>([...strings, 1, -0, 0.5, NaN, true, null, undefined]);
      if (kind < 0.6) return Array.from({ length: Math.floor(random() * 3) }, () => value(depth + 1));
      const out: Record<string, unknown> = {};
      for (let i = Math.floor(random() * 4); i > 0; i--) {
        out[pick(['name', 'version', 'token', 'pin', 'path', 'rule', '0', 'x-api-key'])] = value(depth + 1);
      }
      return out;
    };
    const events: object[] = [];
    for (let i = 0; i < 2000; i++) {
      const event: Record<string, unknown> = {};
      for (const key of ['type', 'session', 'client', 'tool', 'args', 'decision', 'ms', 'repairs', 'error']) {
        if (random() < 0.9) event[key] = random() < 0.5 ? value(0) : pick(strings);
      }
      events.push(event);
    }
    expectSame(events);
    expectSame(events, undefined);
  });

  it('writes the two records of every call (their own shapes) exactly as the general way, whatever their values', () => {
    const events: object[] = [];
    for (const [keys, type] of [
      [CALL_START_KEYS, 'call_start'],
      [CALL_KEYS, 'call'],
    ] as const) {
      events.push(stageShaped(keys, type), stageShaped(keys, type), stageShaped(keys, type, { ms: 7.5 }));
      for (const key of keys) {
        for (const value of ODD_VALUES) events.push(stageShaped(keys, type, { [key]: value }));
      }
      // The other kind's name, or none, in a record of this shape.
      events.push(stageShaped(keys, type, { type: type === 'call' ? 'call_start' : 'call' }));
    }
    expectSame(events);
    expectSame(events, undefined);
    // A pattern of the user's that matches the kinds' own names.
    expectSame(events, createRedactor({ secretPatterns: ['call'] }));
    for (const event of events) {
      expectSame([event]);
      expectSame([event], undefined);
    }
    const fields = new RecordFields(redactor);
    const general = vi.spyOn(fields, 'prepare');
    fields.members(stageShaped(CALL_START_KEYS, 'call_start'));
    fields.members(stageShaped(CALL_KEYS, 'call'));
    expect(general).not.toHaveBeenCalled();
  });

  it("keeps each call's arguments text from its call_start to its last record, other calls' records between", () => {
    const counting = { ...redactor, redactValue: vi.fn(redactor.redactValue) };
    const fields = new RecordFields(counting);
    const check = (event: object): void => expect(fields.members(event)).toBe(reference(event, redactor));
    const inFlight: Record<string, unknown>[] = [];
    for (let i = 0; i < 40; i++) {
      const args = { path: `/tmp/${i}`, token: `secret-${i}`, note: i % 3 === 0 ? GITHUB : 'plain' };
      inFlight.push(args);
      check(stageShaped(CALL_START_KEYS, 'call_start', { args, call: i }));
      // 32 in flight: the oldest call ends as each new one starts.
      if (inFlight.length === 32) check(stageShaped(CALL_KEYS, 'call', { args: inFlight.shift(), call: i }));
    }
    for (const args of inFlight.splice(0)) check(stageShaped(CALL_KEYS, 'call', { args }));
    // One redaction per call: its last record took the text its call_start wrote.
    expect(counting.redactValue).toHaveBeenCalledTimes(40);
    // Taken, not kept: a later record with the same arguments object is written afresh.
    const again = { path: '/tmp/again' };
    check(stageShaped(CALL_START_KEYS, 'call_start', { args: again }));
    check(stageShaped(CALL_KEYS, 'call', { args: again }));
    check(stageShaped(CALL_KEYS, 'call', { args: again }));
    expect(counting.redactValue).toHaveBeenCalledTimes(42);
  });

  it('knows the shapes of the records the audit stage writes', async () => {
    const written: object[] = [];
    const log = {
      writeAhead: (event: object) => {
        written.push(event);
        return Promise.resolve();
      },
      append: (event: object) => void written.push(event),
    } as unknown as AuditLog;
    const stage = createAuditStage({
      log,
      config: { onFailure: 'block', logResults: false } as unknown as AuditConfig,
      session: 'S',
      client: () => ({ name: 'host', version: '1' }),
      logger: { error: () => {} } as unknown as Logger,
    });
    const message = {
      kind: 'tools/call',
      direction: 'upstream',
      exposedName: 'up__echo',
      server: 'up',
      target: 'echo',
      arguments: { text: 'hi' },
      record: { repairs: [] },
    } as unknown as RoutedMessage;
    await stage(message, () => Promise.resolve(Outcome.of({ content: [] })));
    expect(written.map((event) => Object.keys(event))).toEqual([CALL_START_KEYS, CALL_KEYS]);
  });

  it('reuses the text of a frozen object only while what JSON reads of it cannot change', () => {
    const principal = Object.freeze({ source: 'os', subject: 'me', hostname: 'box' });
    let version = '1';
    const changing = Object.freeze(
      Object.defineProperty({ name: 'host' }, 'version', { enumerable: true, get: () => version }),
    );
    const fields = new RecordFields(redactor);
    const check = (event: object): void => expect(fields.members(event)).toBe(reference(event, redactor));
    for (const next of ['1', '2', '2', '3']) {
      version = next;
      check(stageShaped(CALL_KEYS, 'call', { principal, client: changing }));
      check(stageShaped(CALL_START_KEYS, 'call_start', { principal }));
    }
    // Another frozen object with other members under the same field.
    check(stageShaped(CALL_KEYS, 'call', { principal: Object.freeze({ source: 'os', subject: 'you' }) }));
    check(stageShaped(CALL_KEYS, 'call', { principal }));
  });

  it('redacts each frozen principal once, however many take turns (a listener with many hosts)', () => {
    const redactStrings = vi.fn((value: unknown) => redactor.redactStrings(value));
    const counting: Redactor = { ...redactor, redactStrings };
    const fields = new RecordFields(counting);
    const principals = Array.from({ length: 8 }, (_, i) =>
      Object.freeze({ source: 'token', subject: i === 3 ? 'password=hunter2' : `user-${i}`, issuer: 'idp' }),
    );
    for (let round = 0; round < 3; round++)
      for (const principal of principals) {
        const event = stageShaped(CALL_START_KEYS, 'call_start', { principal });
        expect(fields.members(event)).toBe(reference(event, redactor));
      }
    // The object-valued members the call_start fast path redacts are the principal and `args`
    // (arguments are redacted with the full rule, not this one): one per principal, not per record.
    const principalRedactions = redactStrings.mock.calls.filter(([value]) =>
      principals.includes(value as never),
    );
    expect(principalRedactions).toHaveLength(principals.length);
    expect(
      fields.members(stageShaped(CALL_START_KEYS, 'call_start', { principal: principals[3] })),
    ).not.toContain('hunter2');
  });
});

/** A record with the fields of one the audit stage writes, in its order, `overrides` in place. */
function stageShaped(
  keys: readonly string[],
  type: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const usual: Record<string, unknown> = {
    ...call(),
    type,
    principal: { source: 'os', subject: 'me', hostname: 'box' },
    call: 3,
  };
  const event: Record<string, unknown> = {};
  for (const key of keys) event[key] = key in overrides ? overrides[key] : usual[key];
  return event;
}
