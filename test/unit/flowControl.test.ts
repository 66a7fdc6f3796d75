import { describe, expect, it } from 'vitest';
import type { FlowLabel } from '../../src/config/types.js';
import { requestLabels } from '../../src/features/flowControl/feature.js';
import { formatReplay, replayFlow } from '../../src/features/flowControl/replay.js';
import { completesTrifecta, FlowSessions } from '../../src/features/flowControl/sessions.js';
import { createPolicyEngine } from '../../src/features/policy/engine.js';
import { combinePolicyFiles, parsePolicyText } from '../../src/features/policy/loadPolicies.js';

const NOON = new Date('2026-11-29T12:00:00.000Z');

describe('the trifecta', () => {
  const seen = (...labels: FlowLabel[]) => new Set(labels);
  it.each([
    [[], ['egress'], false],
    [['untrusted'], ['egress'], false],
    [['untrusted', 'private'], ['egress'], true],
    [['untrusted', 'egress'], ['private'], true],
    [['private'], ['untrusted', 'egress'], true],
    [['untrusted', 'private', 'egress'], [], false],
    [['untrusted', 'private', 'egress'], ['private'], true],
    [[], ['untrusted', 'private', 'egress'], true],
  ] as [FlowLabel[], FlowLabel[], boolean][])(
    'seen %j, call %j: completes it is %s',
    (before, call, expected) => {
      expect(completesTrifecta(seen(...before), call)).toBe(expected);
    },
  );
});

describe('FlowSessions', () => {
  it('keeps each session apart, numbers its sources, and names them in the lineage', () => {
    const sessions = new FlowSessions({ now: () => NOON });
    expect(sessions.record('a', ['untrusted'], { server: 'web', target: 'get', method: 'tools/call' })).toBe(
      1,
    );
    expect(sessions.record('a', ['private'], { server: 'fs', target: 'read', method: 'tools/call' })).toBe(2);
    expect(sessions.record('b', ['private'], { server: 'fs', target: 'read', method: 'tools/call' })).toBe(1);
    expect([...sessions.seen('a')!]).toEqual(['untrusted', 'private']);
    expect([...sessions.seen('b')!]).toEqual(['private']);
    expect(sessions.seen('c')).toBeUndefined();
    expect(sessions.lineage('a', ['untrusted', 'private'])).toEqual([
      {
        label: 'untrusted',
        source: 1,
        server: 'web',
        target: 'get',
        method: 'tools/call',
        at: NOON.toISOString(),
      },
      {
        label: 'private',
        source: 2,
        server: 'fs',
        target: 'read',
        method: 'tools/call',
        at: NOON.toISOString(),
      },
    ]);
  });

  it('keeps the first five sources of a label, and forgets the session unused for longest past its bound', () => {
    const sessions = new FlowSessions({ now: () => NOON, maxSessions: 2 });
    for (let i = 0; i < 8; i++)
      sessions.record('a', ['untrusted'], { server: 'web', target: `t${i}`, method: 'tools/call' });
    expect(sessions.lineage('a', ['untrusted']).map((s) => s.source)).toEqual([1, 2, 3, 4, 5]);
    sessions.record('b', ['private'], { server: 'fs', target: 'x', method: 'tools/call' });
    sessions.record('a', ['private'], { server: 'fs', target: 'x', method: 'tools/call' });
    sessions.record('c', ['egress'], { server: 'mail', target: 'x', method: 'tools/call' });
    expect(sessions.seen('b')).toBeUndefined();
    expect(sessions.seen('a')?.has('untrusted')).toBe(true);
  });
});

describe('requestLabels', () => {
  const tool = (openWorldHint?: boolean) => ({
    kind: 'tools/call' as const,
    definition: { name: 't', inputSchema: { type: 'object' as const }, annotations: { openWorldHint } },
  });
  it('adds untrusted and egress for openWorldHint: true, and takes nothing away for false or none', () => {
    expect(requestLabels(undefined, [], tool(true))).toEqual(['untrusted', 'egress']);
    expect(requestLabels(['private'], [], tool(true))).toEqual(['untrusted', 'private', 'egress']);
    expect(requestLabels(['egress'], [], tool(false))).toEqual(['egress']);
    expect(requestLabels(['egress'], ['private'], tool())).toEqual(['private', 'egress']);
    expect(requestLabels(undefined, [], tool())).toEqual([]);
  });
  it('reads annotations of tool calls only', () => {
    expect(requestLabels(undefined, [], { ...tool(true), kind: 'resources/read' })).toEqual([]);
  });
});

describe('policy labels and session conditions', () => {
  const file = (text: string) => parsePolicyText(text, '/p/flow.yaml');
  const engine = createPolicyEngine(
    combinePolicyFiles([
      file(
        [
          'labels:',
          '  - id: web',
          '    match: { server: web }',
          '    add: [untrusted]',
          '  - match: { server: web, tool: post }',
          '    add: [egress]',
          '  - match: { kind: resource, resource: "notes://private/*" }',
          '    add: [private]',
          'rules:',
          '  - id: after-both',
          '    match: { tool: run, session: { has: [untrusted, private] } }',
          '    action: deny',
          '',
        ].join('\n'),
      ),
    ]),
  );
  const input = { server: 'web', tool: 'post', annotations: undefined, trusted: false, arguments: {} };

  it('every matching entry adds its labels, named in the answer', () => {
    expect(engine.labelsOf(input)).toEqual({
      labels: ['untrusted', 'egress'],
      entries: ['web', 'flow.yaml#labels2'],
    });
    expect(engine.labelsOf({ ...input, server: 'fs' }).labels).toEqual([]);
    expect(
      engine.labelsOf({
        kind: 'resource',
        server: 'notes',
        resource: 'notes://private/a',
        trusted: false,
        arguments: {},
      }).labels,
    ).toEqual(['private']);
  });

  it('a session condition holds only when the session has seen every label it names', () => {
    const run = { ...input, server: 'sh', tool: 'run' };
    expect(engine.decide(run).effect).toBe('allow');
    expect(engine.decide({ ...run, session: new Set<FlowLabel>(['untrusted']) }).effect).toBe('allow');
    expect(engine.decide({ ...run, session: new Set<FlowLabel>(['private', 'untrusted']) }).effect).toBe(
      'deny',
    );
    expect(engine.explain({ ...run, session: new Set<FlowLabel>(['untrusted']) }).trace[0]?.why).toBe(
      'the session has seen untrusted; the rule wants untrusted, private',
    );
    // Known only for a call: the tool stays listed.
    expect(
      engine.isHiddenFromList({ server: 'sh', tool: 'run', annotations: undefined, trusted: false }),
    ).toBe(false);
  });

  it('a labels entry with a session condition is refused, naming the line', () => {
    expect(() => file('labels:\n  - match: { session: { has: [private] } }\n    add: [private]\n')).toThrow(
      /flow\.yaml:2:\d+: labels\[0\]\.match\.session: a labels entry cannot have a session condition/,
    );
  });
});

describe('replayFlow', () => {
  const base = { session: 's1', type: 'call', server: 'x' };
  const records = [
    { ...base, seq: 1, ts: 'T1', tool: 'web__get', flow: { labels: ['untrusted'], source: 1 } },
    {
      ...base,
      session: 'other',
      seq: 2,
      ts: 'T2',
      tool: 'web__get',
      flow: { labels: ['untrusted'], source: 1 },
    },
    { ...base, seq: 3, ts: 'T3', tool: 'fs__read', flow: { labels: ['private'], source: 2 } },
    { ...base, seq: 4, ts: 'T4', tool: 'plain', decision: { effect: 'allow', rule: null } },
    {
      ...base,
      seq: 5,
      ts: 'T5',
      tool: 'mail__send',
      outcome: 'denied',
      decision: { effect: 'confirm', rule: null, confirmed: false, how: 'elicitation' },
      flow: {
        labels: ['egress'],
        trifecta: 'confirm',
        lineage: [
          { label: 'untrusted', source: 1, server: 'web', target: 'get', method: 'tools/call', at: 'A1' },
          { label: 'private', source: 2, server: 'fs', target: 'read', method: 'tools/call', at: 'A2' },
        ],
      },
    },
  ];

  it('joins each decision to the records of the session that brought its labels', () => {
    const replay = replayFlow(records, 's1');
    expect(replay.steps.map((step) => step.seq)).toEqual([1, 3, 5]);
    expect(replay.steps[2]!.lineage).toEqual([
      { label: 'untrusted', source: 1, name: 'web__get', seq: 1, ts: 'T1', at: 'A1' },
      { label: 'private', source: 2, name: 'fs__read', seq: 3, ts: 'T3', at: 'A2' },
    ]);
    expect(formatReplay(replay)).toContain(
      'seq 5 T5 mail__send [egress]: trifecta CONFIRM, not approved (elicitation), not run',
    );
  });
});
