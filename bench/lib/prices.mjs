// The price list: each benchmark states its headline figures as rows, so that
// bench/priceList.mjs can run them all in one go and print one table. A benchmark run by hand
// records nothing; under the price list, BENCH_PRICES names the file the rows are appended to
// (one JSON object per line, so that benchmarks run one after another simply add theirs).

import { appendFileSync } from 'node:fs';

/**
 * One figure: `what` it is, its `value` and `unit` ('×' for a ratio), and, when it has one, the
 * goal it is judged against (`at most` or `at least` a `limit`).
 *
 * @typedef {{ what: string, value: number, unit: string, atMost?: number, atLeast?: number, note?: string }} Price
 */

/** Whether a figure meets its goal: undefined when it has none. */
export function verdict(price) {
  if (price.atMost !== undefined) return price.value <= price.atMost;
  if (price.atLeast !== undefined) return price.value >= price.atLeast;
  return undefined;
}

/** Adds `bench`'s figures to the price list being made, if one is. */
export function recordPrices(bench, prices) {
  const file = process.env.BENCH_PRICES;
  if (file === undefined || file === '') return;
  appendFileSync(file, prices.map((p) => JSON.stringify({ bench, ...p })).join('\n') + '\n');
}
