import { describe, expect, it } from 'vitest';
import { ModernAnswer } from '../../src/core/host/answerShape.js';
import { ByteParts } from '../../src/lib/byteParts.js';
import { readEnvelope, withoutEnvelope } from '../../src/core/protocol/envelope.js';

const envelope = readEnvelope('tools/list', {
  _meta: {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
  },
});
const serverInfo = { name: 'mcp-warden', version: '9' };
const SERVER = { 'io.modelcontextprotocol/serverInfo': serverInfo };

describe('ModernAnswer', () => {
  it('writes resultType and serverInfo in front of a result kept as text, empty or not', () => {
    const shape = new ModernAnswer({ envelope, serverInfo, cache: undefined });
    for (const text of ['{"content":[]}', '{}', '{ }']) {
      const shaped = shape.text({ text, bytes: undefined }, JSON.parse(text) as object)!;
      expect(JSON.parse(shaped.text)).toEqual({ resultType: 'complete', _meta: SERVER, ...JSON.parse(text) });
    }
  });

  it('does the same to bytes, and adds caching hints to cacheable results', () => {
    const shape = new ModernAnswer({
      envelope,
      serverInfo,
      cache: () => ({ ttlMs: 5, cacheScope: 'private' }),
    });
    const bytes = ByteParts.of(Buffer.from('{"tools":[]}'));
    const shaped = shape.text({ text: '{"tools":[]}', bytes }, undefined)!;
    expect(JSON.parse(shaped.bytes!.toString('utf8'))).toEqual({
      resultType: 'complete',
      _meta: SERVER,
      ttlMs: 5,
      cacheScope: 'private',
      tools: [],
    });
  });

  it('merges a result that has its own _meta or resultType as a value, keeping an interim result uncached', () => {
    const shape = new ModernAnswer({
      envelope,
      serverInfo,
      cache: () => ({ ttlMs: 5, cacheScope: 'public' }),
    });
    const own = { content: [], _meta: { x: 1 } };
    expect(shape.text({ text: JSON.stringify(own), bytes: undefined }, own)).toBeUndefined();
    expect(shape.result(own)).toEqual({
      ...own,
      resultType: 'complete',
      _meta: { x: 1, ...SERVER },
      ttlMs: 5,
      cacheScope: 'public',
    });
    const interim = { resultType: 'input_required', requestState: 's' };
    expect(shape.result(interim)).toEqual({ ...interim, _meta: SERVER });
  });

  it('merges as a value a result with its own resultType, a null _meta, or (cacheable) its own hints', () => {
    const plain = new ModernAnswer({ envelope, serverInfo, cache: undefined });
    const cached = new ModernAnswer({
      envelope,
      serverInfo,
      cache: () => ({ ttlMs: 5, cacheScope: 'public' }),
    });
    for (const text of ['{"resultType":"complete","content":[]}', '{"content":[],"_meta":null}'])
      expect(plain.text({ text, bytes: undefined }, JSON.parse(text) as object)).toBeUndefined();
    for (const text of ['{"tools":[],"ttlMs":9}', '{"tools":[],"cacheScope":"private"}']) {
      const own = JSON.parse(text) as object;
      expect(cached.text({ text, bytes: undefined }, own)).toBeUndefined();
      // Hints matter only where the method is cacheable: elsewhere the text is kept.
      expect(JSON.parse(plain.text({ text, bytes: undefined }, own)!.text)).toEqual({
        resultType: 'complete',
        _meta: SERVER,
        ...own,
      });
    }
  });

  it('keeps the upstream’s text after the added members, characters and bytes alike, large or not', () => {
    const info = { name: 'w\u00e4rden \u2713', version: '\u{1F600}' };
    const shape = new ModernAnswer({ envelope, serverInfo: info, cache: undefined });
    const added = `{"resultType":"complete","_meta":${JSON.stringify({ 'io.modelcontextprotocol/serverInfo': info })}`;
    const body = `"content":[{"type":"text","text":"${'caf\u00e9 \u{1F600} '.repeat(6000)}"}] `;
    for (const text of [`{${body}}`, `{ \n${body}}`, '{}', '{ \t}']) {
      const empty = text.replace(/\s/g, '') === '{}';
      const expected = `${added}${empty ? '' : ','}${text.slice(1)}`;
      expect(shape.text({ text, bytes: undefined }, JSON.parse(text) as object)!.text).toBe(expected);
      // As a large line holds it: in parts, one of them cut inside a character.
      const whole = Buffer.from(text, 'utf8');
      const cut = Math.min(whole.length - 1, 70_001);
      const bytes = new ByteParts([whole.subarray(0, cut), whole.subarray(cut)]);
      const shaped = shape.text({ text, bytes }, undefined)!;
      expect(shaped.bytes!.toString('utf8')).toBe(expected);
      expect(shaped.text).toBe(expected);
    }
  });

  it('maps the retired resource-not-found code to -32602', () => {
    const shape = new ModernAnswer({ envelope, serverInfo, cache: undefined });
    expect(shape.error({ code: -32002, message: 'gone' }).code).toBe(-32602);
  });
});

describe('the envelope', () => {
  it('is stripped for legacy peers, keeping the sender’s other meta', () => {
    expect(
      withoutEnvelope({
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': {},
        traceparent: 't',
      }),
    ).toEqual({ traceparent: 't' });
    expect(withoutEnvelope({ 'io.modelcontextprotocol/protocolVersion': '2026-07-28' })).toBeUndefined();
  });

  it('refuses a log level that is not one of MCP’s', () => {
    expect(() =>
      readEnvelope('x', {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/logLevel': 'loud',
        },
      }),
    ).toThrow(/logLevel/);
  });
});
