#!/usr/bin/env node
// What the host-input depth check costs per message: `nestingExceeds` on typical tools/call
// lines, next to the `JSON.parse` every line gets anyway. Needs a build (`npm run build`).
//
//   node bench/depthCheck.mjs

import { HOST_MAX_DEPTH, nestingExceeds } from '../dist/core/protocol/jsonRpc.js';

const call = (args) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'fs__read', arguments: args },
  });
const lines = {
  'small (path argument)': call({ path: '/home/user/project/src/index.ts', encoding: 'utf8' }),
  '10 KiB of structure': call({
    rows: Array.from({ length: 200 }, (_, i) => ({ id: i, tags: ['a', 'b'], ok: true })),
  }),
  '1 MiB string argument': call({ content: 'x'.repeat(1024 * 1024) }),
};

/** Best of 5 interleaved rounds, in µs per call: the machine is shared, and the best is the least disturbed. */
function usPer(fn, line, best) {
  const rounds = Math.max(50, Math.floor(5e7 / line.length));
  const started = process.hrtime.bigint();
  for (let i = 0; i < rounds; i++) fn(line);
  return Math.min(best ?? Infinity, Number(process.hrtime.bigint() - started) / rounds / 1000);
}

const check = (l) => l.length > HOST_MAX_DEPTH && nestingExceeds(l, HOST_MAX_DEPTH);
const parse = (l) => JSON.parse(l);
const results = new Map();
for (let round = 0; round < 5; round++) {
  for (const [name, line] of Object.entries(lines)) {
    const previous = results.get(name) ?? {};
    results.set(name, {
      check: usPer(check, line, previous.check),
      parse: usPer(parse, line, previous.parse),
    });
  }
}
for (const [name, { check: c, parse: p }] of results) {
  process.stdout.write(
    `${name} (${lines[name].length} chars): depth check ${c.toFixed(2)} µs, JSON.parse ${p.toFixed(2)} µs\n`,
  );
}
