import { describe, expect, it } from 'vitest';
import {
  RawId,
  idKey,
  nestingExceeds,
  OwnRequest,
  BATCHES_REFUSED,
  parseMessage,
  truncateForEcho,
  serializeMessage,
  serializeRawResult,
} from '../../src/core/protocol/jsonRpc.js';
import { EncodedResult } from '../../src/core/rpc/encoded.js';
import { ByteParts } from '../../src/lib/byteParts.js';
import { attachRawResponse, rawResult, RawResponse } from '../../src/core/rpc/rawResult.js';
import {
  bareResponseResultSpan,
  responseResultSpan,
  topLevelMemberSpan,
} from '../../src/lib/json/memberSpan.js';
import { WholeLine } from '../../src/core/transports/largeLine.js';
import { LineDecoder, type OversizeLine } from '../../src/core/transports/lineDecoder.js';
import { StreamTransport } from '../../src/core/transports/streamTransport.js';
import { PassThrough } from 'node:stream';

function decode(chunks: (string | Buffer)[], maxLineBytes = 1024) {
  const lines: string[] = [];
  const oversize: OversizeLine[] = [];
  const d = new LineDecoder({
    maxLineBytes,
    onLine: (l) => lines.push(l),
    onOversize: (o) => oversize.push(o),
  });
  for (const c of chunks) d.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  d.end();
  return { lines, oversize };
}

describe('LineDecoder', () => {
  it.each([
    { name: 'one line per chunk', chunks: ['{"a":1}\n', '{"b":2}\n'], lines: ['{"a":1}', '{"b":2}'] },
    { name: 'several lines in a chunk', chunks: ['1\n2\n3\n'], lines: ['1', '2', '3'] },
    { name: 'a line split across chunks', chunks: ['{"a":', '1}', '\n'], lines: ['{"a":1}'] },
    { name: 'CRLF endings', chunks: ['x\r\ny\r\n'], lines: ['x', 'y'] },
    { name: 'blank lines skipped', chunks: ['\n\n x \n\n'], lines: [' x '] },
    { name: 'last line without newline', chunks: ['a\nb'], lines: ['a', 'b'] },
    {
      name: 'a line finished by the next chunk, then whole lines',
      chunks: ['a\nb', 'c\nd\ne\n'],
      lines: ['a', 'bc', 'd', 'e'],
    },
    { name: 'CRLF split between chunks', chunks: ['x\r', '\ny\r\n'], lines: ['x', 'y'] },
  ])('$name', ({ chunks, lines }) => {
    expect(decode(chunks).lines).toEqual(lines);
  });

  it('decodes several lines of one chunk as it decodes each line alone, invalid UTF-8 included', () => {
    const lines = [
      Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xe2, 0x82]), Buffer.from('"}\r')]),
      Buffer.concat([Buffer.from('{"b":'), Buffer.from([0xe2])]),
      Buffer.from('{"c":"✓"}'),
      Buffer.from([0xf0, 0x9f]),
    ];
    const chunk = Buffer.concat(lines.flatMap((line) => [line, Buffer.from('\n')]));
    const alone = lines.map((line) => line.toString('utf8').replace(/\r$/, ''));
    expect(decode([chunk]).lines).toEqual(alone);
  });

  it('skips an oversize line between short lines of the same chunk', () => {
    const { lines, oversize } = decode([`a\n${'x'.repeat(2000)}\nb\n`]);
    expect(lines).toEqual(['a', 'b']);
    expect(oversize.map((o) => o.bytes)).toEqual([2000]);
  });

  it('keeps multi-byte characters split across chunks intact', () => {
    const bytes = Buffer.from('"héllo ✓"\n');
    expect(decode([bytes.subarray(0, 3), bytes.subarray(3, 10), bytes.subarray(10)]).lines).toEqual([
      '"héllo ✓"',
    ]);
  });

  it('gives a large line its own bytes, whether whole in one chunk or split across several', () => {
    const large = `{"r":"${'é'.repeat(40_000)}"}`;
    const seen: { line?: string; bytes?: string }[] = [];
    const d = new LineDecoder({
      maxLineBytes: 1 << 20,
      onLine: (line) => seen.push({ line }),
      onLargeLine: (bytes) => seen.push({ bytes: bytes.toString('utf8') }),
      onOversize: () => {},
    });
    const all = Buffer.from(`a\n${large}\r\nb\n${large}\n`);
    const cut = all.length - 1000;
    d.push(all.subarray(0, cut));
    d.push(all.subarray(cut));
    expect(seen).toEqual([{ line: 'a' }, { bytes: large }, { line: 'b' }, { bytes: large }]);
  });

  it('tells whether a large line that came in parts holds any control byte', () => {
    const seen: { start: string; controlFree?: boolean }[] = [];
    const d = new LineDecoder({
      maxLineBytes: 200_000,
      onLine: () => {},
      onLargeLine: (bytes, facts) => seen.push({ start: bytes.toString('latin1', 0, 3), ...facts }),
      onOversize: () => {},
    });
    const line = (start: string, at?: number) => {
      const body = Buffer.from(`${start}${'y'.repeat(100_000)}`);
      if (at !== undefined) body[at] = 0x09;
      return body;
    };
    const inParts = (bytes: Buffer, size = 30_000) => {
      for (let i = 0; i < bytes.length; i += size) d.push(bytes.subarray(i, i + size));
      d.push(Buffer.from('\n'));
    };
    inParts(line('AAA'));
    inParts(line('BBB', 10)); // a tab in the first part, long before the line is known to be large
    inParts(line('CCC', 99_000)); // and in the last part
    inParts(Buffer.from('z'.repeat(250_000))); // oversize: dropped, and forgotten
    inParts(line('DDD'));
    d.push(Buffer.concat([line('EEE'), Buffer.from('\n')])); // whole in one chunk: not checked
    expect(seen).toEqual([
      { start: 'AAA', controlFree: true },
      { start: 'BBB' },
      { start: 'CCC' },
      { start: 'DDD', controlFree: true },
      { start: 'EEE' },
    ]);
  });

  it('skips an oversize line that arrives whole in one chunk', () => {
    const { lines, oversize } = decode([`ok1\n${'x'.repeat(3000)}\nok2\n`], 1000);
    expect(lines).toEqual(['ok1', 'ok2']);
    expect(oversize.map((o) => o.bytes)).toEqual([3000]);
  });

  it('skips an oversize line, reports its size and edges, and carries on with the next', () => {
    const big = `{"jsonrpc":"2.0","id":7,"result":"${'x'.repeat(5000)}"}`;
    const { lines, oversize } = decode(['ok1\n', big.slice(0, 2000), big.slice(2000), '\nok2\n'], 1000);
    expect(lines).toEqual(['ok1', 'ok2']);
    expect(oversize).toHaveLength(1);
    expect(oversize[0]!.bytes).toBe(big.length);
    expect(oversize[0]!.head.startsWith('{"jsonrpc":"2.0","id":7')).toBe(true);
    expect(oversize[0]!.tail.endsWith('x"}')).toBe(true);
  });
});

describe('parseMessage', () => {
  it('keeps integer ids beyond 2^53 exactly as sent', () => {
    const line = '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}';
    const parsed = parseMessage(line);
    expect(parsed.ok).toBe(true);
    const id = (parsed as { message: { id: unknown } }).message.id;
    expect(id).toBeInstanceOf(RawId);
    expect(serializeMessage({ jsonrpc: '2.0', id: id as RawId, result: {} })).toBe(
      '{"id":9007199254740993,"jsonrpc":"2.0","result":{}}',
    );
    expect(serializeRawResult(id as RawId, '{"x":1}')).toBe(
      '{"jsonrpc":"2.0","id":9007199254740993,"result":{"x":1}}',
    );
  });

  it('finds the top-level id even when nested objects have ids too', () => {
    const line =
      '{"params":{"id":1,"s":"\\"id\\":2"},"jsonrpc":"2.0","id":12345678901234567890,"method":"x"}';
    expect(topLevelMemberSpan(line, 'id')?.map((i) => i)).toEqual([
      line.indexOf('12345678901234567890'),
      line.indexOf('12345678901234567890') + 20,
    ]);
  });

  it('matches the whole key, not a key it begins or ends', () => {
    const line = '{"resultx":1,"res":2,"xresult":3,"result":4,"results":5}';
    const span = topLevelMemberSpan(line, 'result')!;
    expect(line.slice(span[0], span[1])).toBe('4');
    expect(topLevelMemberSpan('{"resultx":1,"res":2}', 'result')).toBeNull();
  });

  it('takes the last of duplicate keys, as JSON.parse does, so what is inspected is what is forwarded', () => {
    const line = '{"result":{"evil":true},"jsonrpc":"2.0","id":1,"result":{"ok":true}}';
    const span = topLevelMemberSpan(line, 'result')!;
    expect(JSON.parse(line.slice(span[0], span[1]))).toEqual(
      (JSON.parse(line) as { result: unknown }).result,
    );
  });

  it("finds a response's result the short way exactly where the general scan does", () => {
    const lines = [
      '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}',
      '{"jsonrpc":"2.0","id":"a\\"b","result":{"s":"}\\"]"}}',
      '{"jsonrpc":"2.0","id":-12.5e3,"result":[]}',
      '{"jsonrpc":"2.0","id":12345678901234567890,"result":{}}',
      '{"jsonrpc":"2.0","id":1,"result":{"a":1} }',
      '{"jsonrpc":"2.0","id":1,"result":{"a":1}\r',
      // Members after the result: the last `result` wins, or another member follows.
      '{"jsonrpc":"2.0","id":1,"result":{"evil":true},"result":{"ok":true}}',
      '{"jsonrpc":"2.0","id":1,"result":{"a":1},"id":2}',
      '{"jsonrpc":"2.0","id":1,"result":{"a":1},"_meta":{}}',
      // Not in the usual form: whitespace, another order, no result.
      '{"jsonrpc":"2.0","id": 1,"result":{"a":1}}',
      '{ "jsonrpc":"2.0","id":1,"result":{"a":1}}',
      '{"id":1,"jsonrpc":"2.0","result":{"a":1}}',
      '{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}',
      '{"jsonrpc":"2.0","id":1,"resultx":{},"result":2}',
      '\ufeff{"jsonrpc":"2.0","id":1,"result":{}}',
    ];
    for (const line of lines) {
      expect(responseResultSpan(line), line).toEqual(topLevelMemberSpan(line, 'result'));
    }
    const usual = lines[0]!;
    expect(usual.slice(...responseResultSpan(usual)!)).toBe('{"content":[{"type":"text","text":"hello"}]}');
    const twice = lines[6]!;
    expect(twice.slice(...responseResultSpan(twice)!)).toBe('{"ok":true}');
  });

  it("finds a three-member response's result without scanning it exactly where the general scan does", () => {
    const ids = ['1', '"req-7"', '"a\\"b"', '-12.5e3', '12345678901234567890', 'null'];
    const results = [
      '{"content":[{"type":"text","text":"hello"}]}',
      '{}',
      '[]',
      '7',
      '"text"',
      '{"s":"}\\"]","t":"line\\nbreak"}',
      '{"text":"caf\\u00e9"}',
      '{"data":{"id":3,"result":"x","jsonrpc":1}}',
      '{"a":[{"b":"}"},{"c":"{"}],"d":"\\\\"}',
      '{"a":1} ',
      ' {"a":1}',
    ];
    // What may follow the result: nothing, whitespace, or a member again (repeated or another).
    const trailers = [
      '',
      ' ',
      '\r',
      ',"id":2',
      ',"id":1',
      ',"result":{"ok":true}',
      ' , "result" : {"ok":true}',
      ',"r\\u0065sult":{"ok":true}',
      ',"\\u0069d":9',
      ',"jsonrpc":"2.0"',
      ',"_meta":{}',
      ',"result":{"evil":"\\"id\\""}',
    ];
    let bare = 0;
    for (const id of ids)
      for (const result of results)
        for (const trailer of trailers) {
          const line = `{"jsonrpc":"2.0","id":${id},"result":${result}${trailer}}`;
          const parsed = JSON.parse(line) as Record<string, unknown>;
          const general = topLevelMemberSpan(line, 'result');
          const expected = general === null ? undefined : line.slice(...general);
          expect(new RawResponse(line, undefined, parsed).result()?.text, line).toBe(expected);
          if (Object.keys(parsed).length === 3) {
            bare++;
            expect(bareResponseResultSpan(line), line).toEqual(general);
          }
        }
    // Most of the lines above are three-member responses: the short way is what they exercise.
    expect(bare).toBeGreaterThan(ids.length * results.length * 6);
  });

  it('forwards raw text only for the untouched object, never for a copy', () => {
    const line = '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"caf\\u00e9"}]}}';
    const result = (JSON.parse(line) as { result: object }).result;
    attachRawResponse(result, line);
    expect(rawResult(result)?.text).toBe('{"content":[{"type":"text","text":"caf\\u00e9"}]}');
    expect(rawResult({ ...result })).toBeUndefined();
    expect(JSON.stringify(result)).not.toContain('raw');
  });

  it('gives raw ids a map key distinct from any string id', () => {
    expect(idKey(new RawId('99999999999999999999'))).not.toBe('99999999999999999999');
    expect(idKey('raw:1')).toBe('raw:1');
  });

  it.each([
    ['not json', 'not JSON', -32700, null],
    ['[1,2]', BATCHES_REFUSED, -32600, null, [null, null]],
    ['"str"', 'not an object', -32600, null],
    ['{"id":1,"method":"x"}', 'missing "jsonrpc": "2.0"', -32600, 1],
    ['{"jsonrpc":"2.0","id":{},"method":"x"}', 'id must be a string or a number', -32600, null],
    ['{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}', 'params must be an object', -32602, 1],
    ['{"jsonrpc":"2.0","id":1}', 'neither a request, a notification nor a response', -32600, 1],
  ])('rejects %s: %s', (line, reason, code, id, batchIds?: unknown[]) => {
    expect(parseMessage(line)).toEqual({
      ok: false,
      reason,
      code,
      id,
      answer: true,
      ...(batchIds && { batchIds }),
    });
  });

  it('accepts requests, notifications and responses as they are', () => {
    for (const m of [
      { jsonrpc: '2.0', id: 'a', method: 'tools/list' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 3, result: {} },
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'x' } },
    ]) {
      expect(parseMessage(JSON.stringify(m))).toEqual({ ok: true, message: m });
    }
  });
});

describe('StreamTransport', () => {
  function transport() {
    const output = new PassThrough();
    const written: string[] = [];
    const raw: Buffer[] = [];
    output.on('data', (c: Buffer) => {
      written.push(c.toString());
      raw.push(c);
    });
    const t = new StreamTransport({
      input: new PassThrough(),
      output,
      maxLineBytes: 1024,
      onJunk: () => {},
      onOversize: () => {},
    });
    return { t, written, raw };
  }

  it('reads large lines in parts, leaving out none that is not JSON', async () => {
    const input = new PassThrough();
    const junk: string[] = [];
    const messages: unknown[] = [];
    const t = new StreamTransport({
      input,
      output: new PassThrough(),
      maxLineBytes: 1 << 20,
      onJunk: (_line, reason) => junk.push(reason),
      onOversize: () => {},
    });
    t.onmessage = (message) => messages.push(message);
    await t.start();
    const text = `${'w'.repeat(150_000)}\u00e9 "q"`;
    const good = Buffer.from(`${JSON.stringify({ jsonrpc: '2.0', id: 1, result: { text } })}\n`);
    // The same with a raw tab in its long string, in the second of the parts it arrives in.
    const bad = Buffer.from(good);
    bad[70_000] = 0x09;
    for (const line of [good, bad, good])
      for (let i = 0; i < line.length; i += 65_536) input.write(line.subarray(i, i + 65_536));
    await new Promise((resolve) => setImmediate(resolve));
    expect(junk).toEqual(['not JSON']);
    expect(messages).toEqual([1, 1].map((id) => ({ jsonrpc: '2.0', id, result: { text } })));
  });

  /** A response whose result is already text, as the gateway forwards an untouched one. */
  const encoded = (id: number, text: string, bytes?: ByteParts) =>
    new EncodedResult(id, { text, bytes }, () => JSON.parse(text) as Record<string, unknown>);

  it('writes the messages of one turn as one chunk, calling beforeWrite first', async () => {
    const { t, written } = transport();
    const events: string[] = [];
    t.beforeWrite = () => events.push(`beforeWrite after ${written.length} chunks`);
    await t.start();
    void t.send(encoded(1, '{"a":1}'));
    void t.send({ jsonrpc: '2.0', method: 'x' });
    expect(events).toEqual([]);
    await t.flush();
    expect(events).toEqual(['beforeWrite after 0 chunks']);
    expect(written).toEqual(['{"jsonrpc":"2.0","id":1,"result":{"a":1}}\n{"jsonrpc":"2.0","method":"x"}\n']);
  });

  it('keeps the order of text and of a message sent from bytes', async () => {
    const { t, raw } = transport();
    let calls = 0;
    t.beforeWrite = () => calls++;
    await t.start();
    void t.send(encoded(1, '{"n":1}'));
    // Bytes in two parts, split inside a character: written as they are, in order.
    const bytes = Buffer.from('{"x":"\u00e9"}');
    void t.send(encoded(2, '{"x":"\u00e9"}', new ByteParts([bytes.subarray(0, 7), bytes.subarray(7)])));
    void t.send(encoded(3, '{"n":3}'));
    await t.flush();
    expect(calls).toBe(1);
    expect(Buffer.concat(raw).toString('utf8')).toBe(
      '{"jsonrpc":"2.0","id":1,"result":{"n":1}}\n{"jsonrpc":"2.0","id":2,"result":{"x":"\u00e9"}}\n' +
        '{"jsonrpc":"2.0","id":3,"result":{"n":3}}\n',
    );
  });

  it('writes at the end of the turn without a flush', async () => {
    const { t, written } = transport();
    await t.start();
    void t.send(encoded(1, '{"b":2}'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(written).toEqual(['{"jsonrpc":"2.0","id":1,"result":{"b":2}}\n']);
  });
});

describe('OwnRequest', () => {
  it.each([
    ['with params', { name: 'echo', arguments: { text: 'a "quoted" é' }, _meta: { progressToken: 7 } }],
    ['without params', undefined],
  ])('is written %s as JSON.stringify writes its value, members in the same order', (_, params) => {
    for (const method of ['tools/call', 'ping', 'tools/call', 'odd "method"']) {
      const request = new OwnRequest(42, method, params);
      expect(serializeMessage(request)).toBe(JSON.stringify(request));
      expect(JSON.stringify(request)).toBe(
        JSON.stringify({ jsonrpc: '2.0', id: 42, method, ...(params !== undefined && { params }) }),
      );
    }
  });
});

describe('rawResult', () => {
  it.each([
    ['ASCII', '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"plain"}]}}'],
    [
      'text before the result is not ASCII',
      '{"note":"caf\u00e9 \u{1F600}","id":2,"result":{"t":"\u00e9\u00e9"},"jsonrpc":"2.0"}',
    ],
  ])('gives the bytes of exactly the result member (%s)', (_name, line) => {
    const parsed = JSON.parse(line) as { result: object };
    attachRawResponse(parsed.result, line, new WholeLine(Buffer.from(line, 'utf8')));
    const raw = rawResult(parsed.result)!;
    expect(raw.text).toBe(JSON.stringify(parsed.result));
    expect(raw.bytes!.toString('utf8')).toBe(raw.text);
    expect(rawResult(parsed.result)?.text).toBe(JSON.stringify(parsed.result));
  });
});

describe('host input checks', () => {
  it.each([
    ['{"a":', 256, false],
    ['{"a":', 257, true],
    ['[', 257, true],
  ])('nestingExceeds: %s × %i exceeds 256: %s', (open, times, exceeds) => {
    const close = open === '[' ? ']' : '}';
    const text = `${open.repeat(times)}1${close.repeat(times)}`;
    expect(nestingExceeds(text, 256)).toBe(exceeds);
  });

  it('nestingExceeds does not count brackets inside strings, escaped quotes included', () => {
    const inString = `"${'{'.repeat(300)}"`;
    expect(nestingExceeds(`{"a":${inString}}`, 256)).toBe(false);
    const escaped = JSON.stringify({ a: `\\"${'['.repeat(300)}\\\\`, b: `${'x'.repeat(100)}\\"{{{{` });
    expect(nestingExceeds(escaped, 3)).toBe(false);
    expect(nestingExceeds(`${escaped.slice(0, -1)},"c":[[[[1]]]]}`, 3)).toBe(true);
  });

  it('nestingExceeds counts both kinds of bracket, and a message with few of them nests little', () => {
    // Depth 4 from two of each kind: neither kind alone is over 3, together they are.
    const mixed = '{"a":[{"b":[1]}]}';
    expect(nestingExceeds(mixed, 3)).toBe(true);
    expect(nestingExceeds(mixed, 4)).toBe(false);
    // Many brackets side by side (more than the limit) but shallow: the full scan decides.
    expect(nestingExceeds(JSON.stringify({ a: Array.from({ length: 300 }, () => ({ b: [1] })) }), 256)).toBe(
      false,
    );
  });

  it('parseMessage keeps an id JSON.parse would change as its text, and ignores a byte order mark', () => {
    const parsed = parseMessage('\uFEFF{"jsonrpc":"2.0","id":1e400,"method":"ping"}');
    expect(parsed.ok && (parsed.message as { id: unknown }).id).toEqual(new RawId('1e400'));
  });

  it('parseMessage refuses a request with an id of null, and answers no notification', () => {
    expect(parseMessage('{"jsonrpc":"2.0","id":null,"method":"ping"}')).toMatchObject({
      ok: false,
      code: -32600,
      id: null,
      answer: true,
    });
    expect(parseMessage('{"jsonrpc":"1.0","method":"notifications/x"}')).toMatchObject({
      ok: false,
      answer: false,
    });
  });

  it('truncateForEcho keeps short text and says how long a cut one was', () => {
    expect(truncateForEcho('short')).toBe('short');
    expect(truncateForEcho('m'.repeat(1000))).toBe(`${'m'.repeat(200)}… (1000 chars)`);
  });
});
