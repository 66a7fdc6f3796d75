// The tool search benchmark: how well `rankTools` finds the tool a user means, what search mode
// saves in listing tokens, and what one search costs on a 1,500-tool catalogue.
//
//   node bench/toolSearch/run.mjs [--misses] [--quick] [--rounds N]
//
// It ranks the committed catalogue (catalogue.json, real definitions of public MCP servers,
// collected by collect.mjs) against the committed queries (queries.json, written before any
// tuning; a third of them marked `heldout` were never looked at while tuning). `--misses`
// prints the tuning queries whose first accepted tool is not first, never the held-out ones;
// `--quick` prints recall and MRR only, without the listing and the timings.
//
// The ranking source is bundled on the fly from src/ (rolldown, already a devDependency of the
// build), so the ranking figures are always those of the working tree, with no build step
// first. The listing's tokens are read from the built gateway (dist/cli.js), which needs
// `npm run build`; without it that line says so.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { rolldown } from 'rolldown';
import { recordPrices } from '../lib/prices.mjs';
import { quantile } from '../lib/stats.mjs';
import { built, gatewayListing } from './listing.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const SEPARATOR = '__'; // the gateway's default namespace separator
const LATENCY_TOOLS = 1500;
const LIMIT = 10;

const argv = process.argv.slice(2);
const showMisses = argv.includes('--misses');
const quick = argv.includes('--quick');
const roundsAt = argv.indexOf('--rounds');
const rounds = roundsAt === -1 ? 20 : Number(argv[roundsAt + 1]);

const { rankTools } = await loadRanking();
const { sources, tools: raw } = JSON.parse(readFileSync(join(here, 'catalogue.json'), 'utf8'));
const { queries } = JSON.parse(readFileSync(join(here, 'queries.json'), 'utf8'));

/** The tools as the gateway lists them: each name namespaced by its server. */
const catalogue = raw.map((tool) => ({ ...tool, name: tool.server + SEPARATOR + tool.name }));
const servers = sources.map((source) => source.server);
const known = new Set(catalogue.map((tool) => tool.name));
for (const q of queries)
  for (const id of q.accept)
    if (!known.has(id.replace('/', SEPARATOR))) throw new Error(`query "${q.query}": no tool ${id}`);

// Quality on the real catalogue.
const ranking = rankTools(catalogue);
const ranks = queries.map((q) => {
  const accept = new Set(q.accept.map((id) => id.replace('/', SEPARATOR)));
  const found = ranking.search(q.query, { limit: LIMIT });
  const at = found.findIndex((hit) => accept.has(hit.name));
  if (showMisses && q.set !== 'heldout' && at !== 0) {
    const top = found.slice(0, 3).map((hit) => hit.name);
    process.stdout.write(
      `miss (rank ${at === -1 ? '-' : at + 1}) "${q.query}" want ${q.accept} got ${top}\n`,
    );
  }
  return { set: q.set, rank: at === -1 ? Infinity : at + 1 };
});
const all = quality(ranks);
if (quick) {
  // Recall and MRR only: what a change to the ranking moves, in a second.
  for (const [label, q] of [
    ['all', all],
    ['tuning', quality(ranks.filter((r) => r.set !== 'heldout'))],
    ['held out', quality(ranks.filter((r) => r.set === 'heldout'))],
  ])
    process.stdout.write(
      `${label.padEnd(9)} r@1 ${q.r1.toFixed(3)} r@5 ${q.r5.toFixed(3)} r@10 ${q.r10.toFixed(3)} MRR ${q.mrr.toFixed(3)}\n`,
    );
  process.exit(0);
}
const tune = quality(ranks.filter((r) => r.set !== 'heldout'));
const held = quality(ranks.filter((r) => r.set === 'heldout'));

// Tokens of the listing, full and in search mode: what the built gateway lists in front of the
// catalogue's servers in each mode (see listing.mjs), estimated the same way for both.
const listings = built()
  ? {
      all: await gatewayListing(servers, 'all'),
      search: await gatewayListing(servers, 'search'),
    }
  : undefined;

// Latency on 1,500 tools: the real catalogue replicated under renamed servers.
const big = [];
for (let copy = 0; big.length < LATENCY_TOOLS; copy++)
  for (const tool of raw) {
    if (big.length >= LATENCY_TOOLS) break;
    const server = copy === 0 ? tool.server : `${tool.server}${copy}`;
    big.push({ ...tool, server, name: server + SEPARATOR + tool.name });
  }
// CPU time beside wall-clock: the machine is shared, and a busy neighbour lengthens the wall
// time of a build without it costing more.
const builds = [];
const buildCpu = [];
let bigRanking;
for (let i = 0; i < 5; i++) {
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  bigRanking = rankTools(big);
  const used = process.cpuUsage(cpu);
  builds.push(Number(process.hrtime.bigint() - start) / 1e6);
  buildCpu.push((used.user + used.system) / 1000);
}
for (const q of queries) bigRanking.search(q.query, { limit: LIMIT }); // warm-up
const times = [];
const searchCpu = process.cpuUsage();
for (let round = 0; round < rounds; round++)
  for (const q of queries) {
    const start = process.hrtime.bigint();
    bigRanking.search(q.query, { limit: LIMIT });
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }

const searchCpuUsed = process.cpuUsage(searchCpu);
const cpuPerSearch = (searchCpuUsed.user + searchCpuUsed.system) / 1000 / times.length;
const p50 = quantile(times, 0.5);
const p95 = quantile(times, 0.95);
const fmt = (x) => x.toFixed(3);
const out = [];
out.push(
  `catalogue: ${catalogue.length} tools from ${sources.length} servers; ${queries.length} queries ` +
    `(${tune.n} tuning, ${held.n} held out)`,
);
out.push('');
out.push('| queries   | n   | recall@1 | recall@5 | recall@10 | MRR   |');
out.push('| --------- | --- | -------- | -------- | --------- | ----- |');
for (const [label, q] of [
  ['all', all],
  ['tuning', tune],
  ['held out', held],
])
  out.push(
    `| ${label.padEnd(9)} | ${String(q.n).padEnd(3)} | ${fmt(q.r1)}    | ${fmt(q.r5)}    | ${fmt(q.r10)}     | ${fmt(q.mrr)} |`,
  );
out.push('');
let listingRatio;
if (listings === undefined)
  out.push('listing tokens: no built gateway (dist/cli.js); run `npm run build` first');
else {
  const all = tokens(listings.all.json);
  const search = tokens(listings.search.json);
  listingRatio = search / all;
  out.push(
    `listing tokens (chars/4) from the built gateway's tools/list: all ${all} (${listings.all.count} tools), ` +
      `search ${search} (${listings.search.count} tools), ${((100 * search) / all).toFixed(1)}% of all ` +
      `(${(all / search).toFixed(0)}x smaller); search mode's instructions add ${tokens(listings.search.instructions ?? '')}`,
  );
}
out.push(
  `search on ${big.length} tools: p50 ${fmt(p50)} ms, p95 ${fmt(p95)} ms over ${times.length} searches; ` +
    `mean CPU ${fmt(cpuPerSearch)} ms per search; index build median ${fmt(quantile(builds, 0.5))} ms ` +
    `(CPU ${fmt(quantile(buildCpu, 0.5))} ms)`,
);
out.push('');
const goals = [
  ['recall@5 >= 0.9 (all)', all.r5 >= 0.9],
  ['recall@1 >= 0.7 (all)', all.r1 >= 0.7],
  ['recall@5 >= 0.9 (held out)', held.r5 >= 0.9],
  ['recall@1 >= 0.7 (held out)', held.r1 >= 0.7],
  [`search p50 <= 5 ms at ${big.length} tools`, p50 <= 5],
];
for (const [goal, ok] of goals) out.push(`${ok ? 'PASS' : 'FAIL'}  ${goal}`);
// The goals are on the whole question set; the held-out set is our own stricter check of
// overfitting, listed without a goal.
recordPrices('toolSearch', [
  { what: `tool search: p50 per search at ${big.length} tools`, value: p50, unit: 'ms', atMost: 5 },
  { what: 'tool search: recall@5 (all questions)', value: all.r5, unit: '', atLeast: 0.9 },
  { what: 'tool search: recall@1 (all questions)', value: all.r1, unit: '', atLeast: 0.7 },
  {
    what: 'tool search: recall@1 (held-out questions)',
    value: held.r1,
    unit: '',
    note: 'own check, no goal',
  },
  ...(listingRatio === undefined
    ? []
    : [{ what: 'tool search: listing tokens, search ÷ all', value: listingRatio, unit: '×' }]),
]);
process.stdout.write(out.join('\n') + '\n');
process.exitCode = goals.every(([, ok]) => ok) ? 0 : 1;

function quality(list) {
  const n = list.length;
  const at = (k) => list.filter((r) => r.rank <= k).length / n;
  return { n, r1: at(1), r5: at(5), r10: at(10), mrr: list.reduce((sum, r) => sum + 1 / r.rank, 0) / n };
}

function tokens(text) {
  return Math.round(text.length / 4);
}

/** Bundles src/features/toolSearch/ranking.ts into a temporary module and imports it. */
async function loadRanking() {
  // Inside the repository, so that its packages (minisearch) resolve from node_modules.
  const dir = mkdtempSync(join(here, '.ranking-'));
  try {
    const bundle = await rolldown({
      input: join(root, 'src', 'features', 'toolSearch', 'ranking.ts'),
      platform: 'node',
      external: [/^node:/, /^[^./]/],
      logLevel: 'warn',
    });
    await bundle.write({ dir, format: 'esm', entryFileNames: 'ranking.mjs' });
    await bundle.close();
    return await import(pathToFileURL(join(dir, 'ranking.mjs')).href);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
