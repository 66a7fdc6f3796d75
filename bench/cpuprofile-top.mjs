#!/usr/bin/env node
// Summarises V8 .cpuprofile files (from `node --cpu-prof`, e.g. `node bench/run.mjs --cpu-prof
// DIR`): the functions with the most self time, and the same grouped by package or source file,
// so the question "where does the gateway spend a call?" has a first answer without a GUI.
//
//   node bench/cpuprofile-top.mjs FILE.cpuprofile... [--top N]

import { readFileSync } from 'node:fs';
import path from 'node:path';

const argv = process.argv.slice(2);
const topAt = argv.indexOf('--top');
const top = topAt === -1 ? 30 : Number(argv[topAt + 1]);
// Without --top, topAt + 1 is 0: the first file must not be taken for its value.
const files = argv.filter((a, i) => a !== '--top' && (topAt === -1 || i !== topAt + 1));
if (files.length === 0) {
  process.stderr.write('usage: node bench/cpuprofile-top.mjs FILE.cpuprofile... [--top N]\n');
  process.exit(2);
}

/** Where a script belongs: its npm package, our own dist/ file, or Node's internals. */
function owner(url) {
  if (url === '') return '(native/V8)';
  if (url.startsWith('node:')) return 'node internals';
  const nm = url.lastIndexOf('node_modules/');
  if (nm !== -1) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0].startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0];
  }
  const dist = url.indexOf('/dist/');
  return dist !== -1 ? url.slice(dist + 1) : path.basename(url);
}

// Piped into `head`: a closed stdout is the end, not an error.
process.stdout.on('error', () => process.exit(0));

const byFunction = new Map();
const byOwner = new Map();
let totalUs = 0;
for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  // Each sample is attributed to the node on top of the stack; timeDeltas hold the gaps.
  const selfUs = new Map();
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + dt);
  }
  for (const node of profile.nodes) {
    const us = selfUs.get(node.id) ?? 0;
    if (us === 0) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)' || functionName === '(program)') continue;
    totalUs += us;
    const key = `${functionName || '(anonymous)'}  ${url === '' ? '' : `${owner(url)}:${lineNumber + 1}`}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    byOwner.set(owner(url), (byOwner.get(owner(url)) ?? 0) + us);
  }
}

function print(title, map, n) {
  process.stdout.write(`\n${title} (busy time ${(totalUs / 1000).toFixed(0)} ms, idle excluded)\n`);
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n))
    process.stdout.write(
      `${((100 * us) / totalUs).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(1).padStart(8)} ms  ${key}\n`,
    );
}

print('Self time by function', byFunction, top);
print('Self time by package / file', byOwner, 20);
