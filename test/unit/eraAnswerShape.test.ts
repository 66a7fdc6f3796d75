import { describe, expect, it } from 'vitest';
import { ModernAnswer } from '../../src/core/era/answerShape.js';
import { ByteParts } from '../../src/lib/byteParts.js';
import { readEnvelope, withoutEnvelope } from '../../src/core/era/envelope.js';

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
