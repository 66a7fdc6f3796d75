/** Gateway runs that write an audit trail, for the tests that then read or tamper with it. */
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { initialize, rawSession } from './harness.js';

/** A host's `tools/call` of the fixture's echo, as the line it sends. */
export const echoCall = (id: number, text: string): string =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'up__echo', arguments: { text } },
  });

/** One gateway run on `config`: a call per text (ids from `from`), then the host closes stdin. */
export async function runCalls(config: string, texts: string[], from: number): Promise<void> {
  const s = rawSession(config);
  await initialize(s);
  const answered = Promise.all(texts.map((_, i) => s.next((m) => m.id === from + i)));
  texts.forEach((text, i) => s.send(echoCall(from + i, text)));
  await answered;
  s.child.stdin.end();
  expect(await s.exited).toBe(0);
}

/** The lines of a trail file, without the empty one after the last newline. */
export const trailLines = (file: string): string[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l !== '');
