// Preloaded into a benchmarked process (`node --import bench/lib/gcLog.mjs …`): appends one line
// per garbage collection to the file named by BENCH_GC_LOG, "epochMs kind newSpaceKB", so that a
// bench can count a block's collections from outside. kind is perf_hooks' (1 young, 4 full, 8
// incremental marking, 16 weak callbacks); newSpaceKB is V8's new space size just after it.

import { openSync, writeSync } from 'node:fs';
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';

const fd = openSync(process.env.BENCH_GC_LOG, 'a');
new PerformanceObserver((list) => {
  const newSpace = getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
  const kb = newSpace === undefined ? 0 : Math.round(newSpace.space_size / 1024);
  for (const entry of list.getEntries())
    writeSync(fd, `${(performance.timeOrigin + entry.startTime).toFixed(1)} ${entry.detail.kind} ${kb}\n`);
}).observe({ entryTypes: ['gc'] });
