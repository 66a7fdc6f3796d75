#!/usr/bin/env node
// The price list: every benchmark's headline figures from one run, in one table, each with its
// goal and whether it is met. The benchmarks run one after another (never two at once: on two
// cores they would measure each other), each recording its figures through lib/prices.mjs.
//
//   npm run build && node bench/priceList.mjs [--only a,b,...] [--readme] [--out FILE] [--baseline-cli FILE]
//
// --only runs some of the benchmarks (names as in the table below). --readme puts the table,
// with the command and the machine's state, into bench/README.md between its price-list markers.
// --out also writes the rows as JSON. Exit code 0 when every goal is met, 3 when one is missed,
// 1 when a benchmark failed to run (its rows are then missing, and the table says so).

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { verdict } from './lib/prices.mjs';

const BENCH = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.dirname(BENCH);

/** Each benchmark and the arguments the price list runs it with: enough rounds to be stable, no more. */
const BENCHES = {
  firstCall: ['firstCall.mjs', '--rounds', '15'],
  run: ['run.mjs', '--rounds', '5', '--out', path.join(tmpdir(), 'warden-price-run.json')],
  instructions: ['featureCost.mjs', '--callgrind', '20000', '--warmup', '20000', '--only', 'floor-full,full'],
  // Its p50 goal row is against the least HTTP server that forwards to the same upstream
  // (http-floor-forward), measured in the same run; instructions per call would need a second
  // run under --callgrind, so the price list leaves them to bench/README's HTTP section.
  http: ['http.mjs'],
  toolSearch: ['toolSearch/run.mjs'],
  guardrails: ['guardrails.mjs'],
  sandbox: ['sandbox.mjs', '--rounds', '3'],
  lazyStart: ['lazyStart.mjs', '--rounds', '3'],
  oauthRefresh: ['oauthRefresh.mjs'],
};

const { values: flags } = parseArgs({
  options: {
    only: { type: 'string' },
    readme: { type: 'boolean' },
    out: { type: 'string' },
    'baseline-cli': { type: 'string' },
  },
});
// Another build to set warden-full against, in the same run (bench/run.mjs --baseline-cli).
if (flags['baseline-cli'] !== undefined)
  BENCHES.run.push('--baseline-cli', path.resolve(flags['baseline-cli']));
const names = flags.only === undefined ? Object.keys(BENCHES) : flags.only.split(',');
for (const name of names) if (!(name in BENCHES)) throw new Error(`unknown benchmark ${name}`);

const work = mkdtempSync(path.join(tmpdir(), 'warden-prices-'));
const file = path.join(work, 'prices.jsonl');
writeFileSync(file, '');
const loadBefore = loadavg()[0];
const failed = [];
const started = Date.now();
for (const name of names) {
  const [script, ...args] = BENCHES[name];
  process.stderr.write(`price list: ${name} (node bench/${script} ${args.join(' ')})\n`);
  // Output goes to stderr: this script's own stdout is the table.
  const run = spawnSync(process.execPath, [path.join(BENCH, script), ...args], {
    cwd: ROOT,
    env: { ...process.env, BENCH_PRICES: file },
    stdio: ['ignore', 2, 2],
  });
  // Exit code 3 (and the guardrail bench's 1) mean a goal was missed, which the rows show.
  const recorded = readFileSync(file, 'utf8');
  if (run.status !== 0 && !recorded.split('\n').some((line) => line.includes(`"bench":"${bench(name)}"`)))
    failed.push(`${name} (exit ${run.status ?? run.signal})`);
}
const rows = readFileSync(file, 'utf8')
  .split('\n')
  .filter((line) => line !== '')
  .map((line) => JSON.parse(line));
rmSync(work, { recursive: true, force: true });

/** The name a benchmark records its rows under (its script's, not the price list's). */
function bench(name) {
  return name === 'instructions' ? 'featureCost' : name;
}

const number = (p) => {
  const digits = Math.abs(p.value) >= 100 ? 0 : Math.abs(p.value) >= 10 ? 1 : p.unit === '×' ? 2 : 3;
  return `${p.value.toFixed(digits)}${p.unit === '×' ? '×' : p.unit === '' ? '' : ` ${p.unit}`}`;
};
const goal = (p) =>
  p.atMost !== undefined
    ? `≤ ${p.atMost}${p.unit === '×' ? '×' : ` ${p.unit}`.trimEnd()}`
    : p.atLeast !== undefined
      ? `≥ ${p.atLeast}${p.unit === '×' ? '×' : ` ${p.unit}`.trimEnd()}`
      : (p.note ?? '');
const result = (p) => {
  const met = verdict(p);
  return met === undefined ? 'reported' : met ? 'PASS' : 'FAIL';
};
const minutes = ((Date.now() - started) / 60_000).toFixed(0);
const lines = [
  `Command: \`npm run build && node bench/priceList.mjs${flags.only ? ` --only ${flags.only}` : ''}` +
    `${flags['baseline-cli'] ? ` --baseline-cli ${flags['baseline-cli']}` : ''}\` ` +
    `(node ${process.version}, ${cpus().length} cores, load ${loadBefore.toFixed(1)} before and ` +
    `${loadavg()[0].toFixed(1)} after, ${minutes} min)`,
  '',
  '| benchmark | figure | value | goal | result |',
  '| --- | --- | --: | --- | --- |',
  ...rows.map((p) => `| ${p.bench} | ${p.what} | ${number(p)} | ${goal(p)} | ${result(p)} |`),
  ...failed.map((name) => `| ${name} | did not run to the end: see its output above | | | FAIL |`),
];
const table = lines.join('\n') + '\n';
process.stdout.write(table);
if (flags.out !== undefined) writeFileSync(flags.out, `${JSON.stringify({ rows, failed }, null, 2)}\n`);
if (flags.readme) {
  const readme = path.join(BENCH, 'README.md');
  const text = readFileSync(readme, 'utf8');
  const begin = '<!-- price list: begin -->';
  const end = '<!-- price list: end -->';
  const at = text.indexOf(begin);
  const until = text.indexOf(end);
  if (at < 0 || until < at) throw new Error(`bench/README.md has no ${begin} … ${end} markers`);
  writeFileSync(readme, `${text.slice(0, at + begin.length)}\n${table}${text.slice(until)}`);
  // The lint step checks the README's layout: the table is laid out as Prettier would.
  const prettier = spawnSync(
    process.execPath,
    [path.join(ROOT, 'node_modules/prettier/bin/prettier.cjs'), '--write', readme],
    {
      stdio: 'inherit',
    },
  );
  if (prettier.status !== 0) process.stderr.write('price list: Prettier could not lay out bench/README.md\n');
}
process.exitCode = failed.length > 0 ? 1 : rows.some((p) => verdict(p) === false) ? 3 : 0;
