import { describe, expect, it } from 'vitest';
import { createDetector } from '../../src/features/guardrails/detector.js';
import { guardResult } from '../../src/features/guardrails/guardResult.js';
import { isIban, luhn } from '../../src/features/guardrails/ownDetectors.js';
import {
  AWS_KEY,
  GITHUB_TOKEN,
  GOOGLE_API_KEY as GOOGLE,
  JWT,
  PRIVATE_KEY,
  SLACK_TOKEN as SLACK,
  STRIPE_KEY as STRIPE,
} from '../fixtures/secretSamples.js';

const detector = createDetector({ patterns: [{ name: 'ticket-token', regex: /tkt_[A-Za-z0-9]{24}/g }] });
const categories = async (text: string) =>
  (await detector.detect(text)).map((f) => [f.category, text.slice(f.start, f.end)]);

describe('the detector', () => {
  it('finds each kind of secret the preset and our own rules cover', async () => {
    const text = `a ${AWS_KEY} b ${GITHUB_TOKEN}\n${PRIVATE_KEY}\n${SLACK} ${STRIPE} ${GOOGLE} ${JWT} tkt_${'a1'.repeat(12)}`;
    const found = Object.fromEntries(await categories(text));
    expect(found['aws-access-key']).toBe(AWS_KEY);
    expect(found['github-token']).toBe(GITHUB_TOKEN);
    expect(found['private-key']).toBe(PRIVATE_KEY);
    expect(found['slack-token']).toBe(SLACK);
    expect(found['stripe-key']).toBe(STRIPE);
    expect(found['google-api-key']).toBe(GOOGLE);
    expect(found['jwt']).toBe(JWT);
    expect(found['ticket-token']).toBe(`tkt_${'a1'.repeat(12)}`);
  });

  it('finds personal data only where its checksum holds', async () => {
    const text =
      'mail ada@example.org, call +44 20 7946 0958 or (555) 123-4567, card 4111 1111 1111 1111, ' +
      'not 4111 1111 1111 1112, iban GB82 WEST 1234 5698 7654 32, not GB82 WEST 1234 5698 7654 33';
    expect(await categories(text)).toEqual([
      ['email', 'ada@example.org'],
      ['phone', '+44 20 7946 0958'],
      ['phone', '(555) 123-4567'],
      ['card-number', '4111 1111 1111 1111'],
      ['iban', 'GB82 WEST 1234 5698 7654 32'],
    ]);
  });

  it('leaves ids, hashes, dates and code alone', async () => {
    const text = [
      '550e8400-e29b-41d4-a716-446655440000',
      'sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08',
      '2026-11-29T05:06:39Z 1732856799000',
      'const x = foo.bar(baz, 42); // eyJ not a token',
      'npm install left-pad@1.3.0',
    ].join('\n');
    expect(await categories(text)).toEqual([]);
  });

  it('checks Luhn and mod 97', () => {
    expect(luhn('79927398713')).toBe(true);
    expect(luhn('79927398710')).toBe(false);
    expect(isIban('DE89370400440532013000')).toBe(true);
    expect(isIban('DE89370400440532013001')).toBe(false);
  });
});

describe('guarding a result', () => {
  const redactAll = () => 'redact' as const;

  it('redacts text, structuredContent strings and embedded resources, naming each place', async () => {
    const result = {
      content: [
        { type: 'text', text: `key ${AWS_KEY}` },
        { type: 'image', data: 'iVBORw0KGgo=', mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'file:///a', text: GITHUB_TOKEN } },
      ],
      structuredContent: { user: { 'api-key': AWS_KEY, note: 'fine' }, keys: [PRIVATE_KEY] },
    };
    const guarded = await guardResult('tools/call', result, detector, redactAll);
    expect(guarded.blocked).toBe(false);
    expect(guarded.findings).toEqual([
      { category: 'aws-access-key', action: 'redact', location: 'content[0].text', count: 1 },
      { category: 'github-token', action: 'redact', location: 'content[2].resource.text', count: 1 },
      {
        category: 'aws-access-key',
        action: 'redact',
        location: 'structuredContent.user["api-key"]',
        count: 1,
      },
      { category: 'private-key', action: 'redact', location: 'structuredContent.keys[0]', count: 1 },
    ]);
    expect(guarded.redacted).toEqual({
      content: [
        { type: 'text', text: 'key [redacted:aws-access-key]' },
        result.content[1],
        { type: 'resource', resource: { uri: 'file:///a', text: '[redacted:github-token]' } },
      ],
      structuredContent: {
        user: { 'api-key': '[redacted:aws-access-key]', note: 'fine' },
        keys: ['[redacted:private-key]'],
      },
    });
    // The result itself is a value: never edited in place.
    expect(result.content[0]).toEqual({ type: 'text', text: `key ${AWS_KEY}` });
  });

  it('scans what a resource read returns', async () => {
    const guarded = await guardResult(
      'resources/read',
      { contents: [{ uri: 'file:///env', text: `TOKEN=${SLACK}` }] },
      detector,
      redactAll,
    );
    expect(guarded.redacted).toEqual({
      contents: [{ uri: 'file:///env', text: 'TOKEN=[redacted:slack-token]' }],
    });
  });

  it('blocks, audits or ignores by category', async () => {
    const result = { content: [{ type: 'text', text: `${STRIPE} and ada@example.org` }] };
    const actions = { 'stripe-key': 'block', email: 'audit' } as const;
    const blocked = await guardResult(
      'tools/call',
      result,
      detector,
      (c) => actions[c as keyof typeof actions] ?? 'off',
    );
    expect(blocked).toMatchObject({ blocked: true, redacted: undefined });
    const audited = await guardResult('tools/call', result, detector, (c) =>
      c === 'email' ? 'audit' : 'off',
    );
    expect(audited).toEqual({
      blocked: false,
      redacted: undefined,
      findings: [{ category: 'email', action: 'audit', location: 'content[0].text', count: 1 }],
    });
    const off = await guardResult('tools/call', result, detector, () => 'off');
    expect(off.findings).toEqual([]);
  });
});
