// Preloaded beside lib/gcLog.mjs by bench/window.mjs --gc: what V8's collections did between two
// SIGWINCH signals (the window.mjs throughput window), from v8.GCProfiler's heap figures before
// and after each one, written as JSON to BENCH_GC_WINDOW when the process exits:
//
//   - allocated: bytes allocated in the new space, summed between consecutive collections and
//     scaled to the number of collections (what was allocated before the first is not seen);
//   - promoted: bytes by which young collections grew the old space;
//   - collections: how many of each kind.
//
// Counts like these do not depend on the machine's load, unlike CPU time.

import { writeFileSync } from 'node:fs';
import { GCProfiler } from 'node:v8';

let profiler;
let statistics;

process.on('SIGWINCH', () => {
  if (profiler === undefined) {
    profiler = new GCProfiler();
    profiler.start();
  } else statistics ??= profiler.stop().statistics;
});

process.on('exit', () => {
  if (profiler === undefined) return;
  statistics ??= profiler.stop().statistics;
  writeFileSync(process.env.BENCH_GC_WINDOW, JSON.stringify(summarize(statistics)));
});

const used = (heap, space) => heap.heapSpaceStatistics.find((s) => s.spaceName === space)?.spaceUsedSize ?? 0;

function summarize(gcs) {
  let between = 0;
  let promoted = 0;
  const collections = {};
  for (const [i, gc] of gcs.entries()) {
    collections[gc.gcType] = (collections[gc.gcType] ?? 0) + 1;
    const previous = gcs[i - 1];
    if (previous !== undefined)
      between += used(gc.beforeGC, 'new_space') - used(previous.afterGC, 'new_space');
    if (gc.gcType === 'Scavenge') promoted += used(gc.afterGC, 'old_space') - used(gc.beforeGC, 'old_space');
  }
  const allocated = gcs.length > 1 ? (between / (gcs.length - 1)) * gcs.length : 0;
  return { allocated, promoted, collections };
}
