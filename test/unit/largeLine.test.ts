import { describe, expect, it } from 'vitest';
import { parseMessage, RawId } from '../../src/core/protocol/jsonRpc.js';
import { LONG_STRING_BYTES, parseLargeMessage, WholeLine } from '../../src/core/transports/largeLine.js';
import { attachRawResponse, rawResult } from '../../src/core/rpc/rawResult.js';
import { ByteParts } from '../../src/lib/byteParts.js';

/** `text`'s bytes starting `shift` bytes into a larger buffer, to try every word alignment. */
function bytesAt(text: string, shift: number): Buffer {
  const body = Buffer.from(text, 'utf8');
  const room = Buffer.alloc(body.length + shift + 3, 0x20);
  body.copy(room, shift);
  return room.subarray(shift, shift + body.length);
}

/** What every reader of the message sees: all of it, in order (reads every lazy string). */
function seen(message: unknown): string {
  return JSON.stringify(message);
}

/** Deterministic pseudo-random numbers (a test must fail the same way twice). */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    return s / 2 ** 32;
  };
}

const PLAIN = ['x', 'abc ', 'é', '\u{1F600}', '\u2028', '/', ' '];
const ESCAPED = ['"', '\\', '\n', '\t', '\u0001', '\u001f'];

/** `escapeRate`: the share of pieces JSON must escape (dense escapes make the line parsed whole). */
function randomString(next: () => number, length: number, escapeRate: number): string {
  let s = '';
  while (s.length < length) {
    const pieces = next() < escapeRate ? ESCAPED : PLAIN;
    s += pieces[Math.floor(next() * pieces.length)]!;
  }
  return s;
}

function randomValue(next: () => number, depth: number, escapeRate: number): unknown {
  const r = next();
  if (depth > 3 || r < 0.25) {
    // Mostly short strings and numbers, sometimes a long string.
    if (r < 0.05) return randomString(next, LONG_STRING_BYTES + Math.floor(next() * 6000), escapeRate);
    if (r < 0.15) return randomString(next, Math.floor(next() * 20), 0.5);
    return Math.floor(next() * 1e6) / 100;
  }
  if (r < 0.6)
    return Array.from({ length: Math.floor(next() * 5) }, () => randomValue(next, depth + 1, escapeRate));
  const object: Record<string, unknown> = {};
  for (let i = Math.floor(next() * 5); i > 0; i--)
    object[`k${Math.floor(next() * 10)}`] = randomValue(next, depth + 1, escapeRate);
  return object;
}

/** A response line of at least 64 KiB, with long strings here and there. */
function randomLine(seed: number, escapeRate: number): string {
  const next = random(seed);
  const blocks: unknown[] = [];
  while (JSON.stringify(blocks).length < 70_000)
    blocks.push({ type: 'text', text: randomString(next, 2000 + Math.floor(next() * 20_000), escapeRate) });
  const result = {
    content: blocks,
    structuredContent: randomValue(next, 0, escapeRate),
    _meta: { n: next() },
  };
  return JSON.stringify({ result, jsonrpc: '2.0', id: Math.floor(next() * 1000) });
}

describe('parseLargeMessage', () => {
  it.each([
    ['sparse', 0.01, false],
    ['none', 0, false],
    ['dense', 0.5, true],
  ])('gives every reader what parsing the whole line gives (escapes: %s)', (_name, escapeRate, whole) => {
    for (let seed = 1; seed <= 40; seed++) {
      const line = randomLine(seed, escapeRate);
      // JSON.stringify writes no raw control bytes: the line decoder would have found none.
      const parsed = parseLargeMessage(bytesAt(line, seed % 4), { controlFree: seed % 2 === 0 });
      const expected = parseMessage(line);
      expect(parsed.ok && expected.ok).toBe(true);
      if (!parsed.ok || !expected.ok) continue;
      // Long strings are left in the bytes unless their escapes are too dense for that to pay.
      expect(parsed.large.whole, `seed ${seed}`).toBe(whole);
      expect(seen(parsed.message)).toBe(seen(expected.message));
      expect(parsed.message).toEqual(expected.message);
    }
  });

  it('gives the same outcome when the line comes in parts cut anywhere, and forwards its result as sent', () => {
    const spoilers = [
      (s: string) => s,
      (s: string) => s.replace(/(?<=text":"[^"\\]{3000})/, '\u0001'),
      (s: string) => s.replace(/(?<=text":"[^"\\]{3000})/, '\\x'),
    ];
    for (let seed = 1; seed <= 30; seed++) {
      const line = spoilers[seed % 3]!(randomLine(seed, seed % 2 === 0 ? 0.01 : 0));
      const bytes = Buffer.from(line, 'utf8');
      // Parts of every size from one byte up, so cuts fall inside strings, escapes and characters.
      const next = random(seed);
      const parts: Buffer[] = [];
      for (let at = 0; at < bytes.length;) {
        const size = next() < 0.3 ? 1 + Math.floor(next() * 4) : 1 + Math.floor(next() * 20_000);
        parts.push(bytes.subarray(at, at + size));
        at += size;
      }
      const parsed = parseLargeMessage(new ByteParts(parts), { controlFree: seed % 3 === 0 });
      const expected = parseMessage(line);
      expect(parsed.ok, `seed ${seed}`).toBe(expected.ok);
      if (!parsed.ok || !expected.ok) continue;
      expect(seen(parsed.message)).toBe(seen(expected.message));
      const { result } = parsed.message as { result: object };
      attachRawResponse(result, parsed.large.text, parsed.large);
      const raw = rawResult(result)!;
      expect(Buffer.concat(raw.bytes!.buffers).toString('utf8')).toBe(
        JSON.stringify((JSON.parse(line) as { result: unknown }).result),
      );
    }
  });

  it('decodes a long string only when it is read, and then keeps it as a plain value', () => {
    const text = `${'caf\u00e9 \u{1F600} '.repeat(2000)}end`;
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text }] } });
    const parsed = parseLargeMessage(Buffer.from(line));
    if (!parsed.ok) throw new Error(parsed.reason);
    const block = (parsed.message as unknown as { result: { content: { text: string }[] } }).result
      .content[0]!;
    expect(Object.getOwnPropertyDescriptor(block, 'text')?.get).toBeTypeOf('function');
    expect(block.text).toBe(text);
    expect(Object.getOwnPropertyDescriptor(block, 'text')).toEqual({
      value: text,
      writable: true,
      enumerable: true,
      configurable: true,
    });
    expect({ ...block }).toEqual({ type: 'text', text });
  });

  it('lets a long string be replaced before it is ever read', () => {
    const line = JSON.stringify({ jsonrpc: '2.0', id: 1, result: { items: ['y'.repeat(70_000)] } });
    const parsed = parseLargeMessage(Buffer.from(line));
    if (!parsed.ok) throw new Error(parsed.reason);
    const items = (parsed.message as unknown as { result: { items: string[] } }).result.items;
    items[0] = 'replaced';
    expect(items).toEqual(['replaced']);
  });

  it('keeps an id too large for a double exactly as sent', () => {
    const line = `{"result":{"t":"${'z'.repeat(70_000)}"},"jsonrpc":"2.0","id":12345678901234567890123}`;
    const parsed = parseLargeMessage(Buffer.from(line));
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(parsed.large.whole).toBe(false);
    expect((parsed.message as { id: unknown }).id).toEqual(new RawId('12345678901234567890123'));
  });

  it.each([
    ['a raw control character', (s: string) => `${s.slice(0, 5001)}\u0001${s.slice(5001)}`],
    ['a raw tab', (s: string) => `${s.slice(0, 40_000)}\t${s.slice(40_000)}`],
    ['an invalid escape', (s: string) => `${s.slice(0, 9000)}\\x${s.slice(9000)}`],
    ['a \\u escape with a non-hex digit', (s: string) => `${s.slice(0, 9000)}\\u12G4${s.slice(9000)}`],
    ['a \\u escape cut short by the closing quote', (s: string) => `${s}\\u12`],
  ])('rejects a long string with %s, as JSON.parse does, at every alignment', (_name, spoil) => {
    for (const extra of [0, 1, 2, 3]) {
      const line = `{"jsonrpc":"2.0","id":1,"result":{"text":"${spoil('w'.repeat(70_000 + extra))}"}}`;
      for (let shift = 0; shift < 4; shift++) {
        const parsed = parseLargeMessage(bytesAt(line, shift));
        expect(parsed.ok).toBe(false);
        if (!parsed.ok) expect(parsed.reason).toBe('not JSON');
      }
    }
  });

  it('finds a control character wherever it falls: any byte of a word, any word of a round', () => {
    const body = 'v'.repeat(LONG_STRING_BYTES * 4);
    // Near the start (the bytes before the first whole word, the first rounds of four words) and
    // near the end (the words after the last round of four, the bytes after the last word).
    const places = [...Array(40).keys()].flatMap((i) => [i, LONG_STRING_BYTES + i, body.length - 1 - i]);
    for (const at of places) {
      for (let shift = 0; shift < 4; shift++) {
        const line = `{"jsonrpc":"2.0","id":1,"result":{"t":"${body.slice(0, at)}\u001f${body.slice(at)}","pad":"${'p'.repeat(70_000)}"}}`;
        expect(parseLargeMessage(bytesAt(line, shift)).ok, `at ${at}, shift ${shift}`).toBe(false);
      }
    }
  });

  it.each([
    [
      'has no long string',
      JSON.stringify({ jsonrpc: '2.0', id: 1, result: { n: Array.from({ length: 20_000 }, (_, i) => i) } }),
    ],
    [
      'is mostly short strings',
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        result: { s: Array.from({ length: 20_000 }, (_, i) => `s${i}`) },
      }),
    ],
    [
      'has escapes too dense to pay',
      JSON.stringify({ jsonrpc: '2.0', id: 1, result: { t: '"\n'.repeat(40_000) } }),
    ],
  ])('parses the whole line when it %s', (_name, line) => {
    const parsed = parseLargeMessage(Buffer.from(line));
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(parsed.large.whole).toBe(true);
    expect(parsed.message).toEqual(JSON.parse(line));
  });

  it('never takes a long object key for a string value', () => {
    const key = 'k'.repeat(70_000);
    const line = `{"jsonrpc":"2.0","id":1,"result":{"${key}" : "v","short":"${'s'.repeat(2000)}"}}`;
    const parsed = parseLargeMessage(Buffer.from(line));
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(parsed.large.whole).toBe(false);
    expect(Object.keys((parsed.message as { result: object }).result)).toEqual([key, 'short']);
    expect(parsed.message).toEqual(JSON.parse(line));
  });

  it('reports a line that is not a message with the reason any line gets', () => {
    const line = `{"id":1,"result":{"t":"${'q'.repeat(70_000)}"}}`;
    expect(parseLargeMessage(Buffer.from(line))).toEqual({
      ok: false,
      reason: 'missing "jsonrpc": "2.0"',
      code: -32600,
      id: 1,
      answer: true,
      text: line,
    });
  });
});

describe('a large line parsed whole', () => {
  /** A tool list's answer: thousands of short strings, so the line is parsed whole. */
  function listLine(tools: number): string {
    const list = Array.from({ length: tools }, (_, i) => ({
      name: `tool_${i}`,
      description: `Tool ${i} (caf\u00e9).`,
      inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] },
    }));
    return JSON.stringify({ jsonrpc: '2.0', id: 7, result: { tools: list } });
  }

  it('keeps the parts it arrived in, and forwards its result from them as sent', () => {
    const line = listLine(2000);
    const bytes = Buffer.from(line, 'utf8');
    const parts: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += 65_536) parts.push(bytes.subarray(at, at + 65_536));
    const parsed = parseLargeMessage(new ByteParts(parts));
    if (!parsed.ok) throw new Error(parsed.reason);
    expect(parsed.large.whole).toBe(true);
    expect(parsed.message).toEqual(JSON.parse(line));
    // Decoding the whole line made a copy of it only for that moment: the line is still held
    // as the very buffers it came in, not as a joined copy beside them.
    expect(parsed.large.bytes.buffers).toHaveLength(parts.length);
    parsed.large.bytes.buffers.forEach((part, i) => expect(part).toBe(parts[i]));
    const { result } = parsed.message as { result: object };
    attachRawResponse(result, parsed.large.text, parsed.large);
    expect(Buffer.concat(rawResult(result)!.bytes!.buffers).toString('utf8')).toBe(
      JSON.stringify((JSON.parse(line) as { result: unknown }).result),
    );
  });
});

describe('rawResult of a large line', () => {
  it.each([
    ['ASCII', { t: 'a'.repeat(80_000) }, ''],
    [
      'not ASCII before, in and after',
      { pre: 'caf\u00e9', t: `\u{1F600}${'b'.repeat(80_000)}\u00e9`, post: '\u2028' },
      '\u00e9',
    ],
    ['escapes in the long string', { t: `"${'c\\'.repeat(1000)}${'d'.repeat(80_000)}\n` }, ''],
  ])('gives exactly the bytes of the result member (%s)', (_name, result, note) => {
    const line = `{"note":"${note}","result":${JSON.stringify(result)},"jsonrpc":"2.0","id":3}`;
    for (const large of [
      (() => {
        const parsed = parseLargeMessage(Buffer.from(line));
        if (!parsed.ok) throw new Error(parsed.reason);
        return { message: parsed.message as unknown as { result: object }, large: parsed.large };
      })(),
      { message: JSON.parse(line) as { result: object }, large: new WholeLine(Buffer.from(line)) },
    ]) {
      attachRawResponse(large.message.result, large.large.text, large.large);
      const raw = rawResult(large.message.result)!;
      expect(raw.bytes!.toString('utf8')).toBe(JSON.stringify(result));
      expect(raw.text).toBe(JSON.stringify(result));
    }
  });
});

describe('a large line that is not valid UTF-8', () => {
  const parse = (bytes: Buffer) => {
    const parsed = parseLargeMessage(bytes);
    if (!parsed.ok) throw new Error(parsed.reason);
    return { message: parsed.message as unknown as { result: { t: string } }, large: parsed.large };
  };
  const withBadByte = (before: string, after: string) =>
    Buffer.concat([Buffer.from(before), Buffer.from([0xff]), Buffer.from(after)]);

  it('is not cut by offsets measured in its text when a bad byte comes before the result', () => {
    const bytes = withBadByte(
      '{"note":"caf\u00e9 ',
      `","result":{"t":"${'a'.repeat(80_000)}"},"jsonrpc":"2.0","id":3}`,
    );
    const { message, large } = parse(bytes);
    expect(large.offsetsExact).toBe(false);
    attachRawResponse(message.result, large.text, large);
    // No raw text: the router writes the parsed value (the bad byte read as U+FFFD, as any host reads it).
    expect(rawResult(message.result)).toBeUndefined();
    expect(message.result.t).toBe('a'.repeat(80_000));
  });

  it('forwards a long string with a bad byte in it exactly as sent', () => {
    const bytes = withBadByte(`{"result":{"t":"${'a'.repeat(80_000)}`, '"},"jsonrpc":"2.0","id":3}');
    const { message, large } = parse(bytes);
    expect(large.whole).toBe(false);
    attachRawResponse(message.result, large.text, large);
    const raw = rawResult(message.result)!;
    expect(raw.bytes!.slice()).toEqual(
      bytes.subarray('{"result":'.length, bytes.length - '},"jsonrpc":"2.0","id":3}'.length + 1),
    );
    expect(message.result.t).toBe(`${'a'.repeat(80_000)}\ufffd`);
  });
});
