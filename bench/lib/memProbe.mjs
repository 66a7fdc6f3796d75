// Loaded into a gateway with `node --import` by bench/listRss.mjs --probe: samples the process's
// memory split (process.memoryUsage() and V8's heap spaces) after every garbage collection and
// every few milliseconds, and keeps the largest value of each figure and the whole split at the
// largest RSS seen. On SIGUSR2 it writes them, and the split at that moment, to
// $WARDEN_MEM_PROBE_DIR/<pid>.json. The samples miss what lives between two of them (a
// synchronous parse holds the event loop), so the VmHWM that /proc reports is the peak to trust;
// the split says what the heap was made of around it. Loaded in every compared instance alike.

import { writeFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

const MB = 1024 * 1024;
const max = {};
let atPeakRss;
let samples = 0;

function split() {
  const usage = process.memoryUsage();
  const out = {
    rss: usage.rss / MB,
    heapTotal: usage.heapTotal / MB,
    heapUsed: usage.heapUsed / MB,
    external: usage.external / MB,
    arrayBuffers: usage.arrayBuffers / MB,
  };
  for (const space of v8.getHeapSpaceStatistics()) out[`${space.space_name}.size`] = space.space_size / MB;
  const heap = v8.getHeapStatistics();
  out.malloced = heap.malloced_memory / MB;
  out.peakMalloced = heap.peak_malloced_memory / MB;
  return out;
}

function sample() {
  samples++;
  const now = split();
  for (const [key, value] of Object.entries(now)) if (!(value <= max[key])) max[key] = value;
  if (atPeakRss === undefined || now.rss > atPeakRss.rss) atPeakRss = now;
}

new PerformanceObserver(sample).observe({ entryTypes: ['gc'] });
setInterval(sample, 2).unref();

const dir = process.env.WARDEN_MEM_PROBE_DIR;
process.on('SIGUSR2', () => {
  sample();
  const file = path.join(dir, `${process.pid}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify({ samples, max, atPeakRss, now: split() }));
  renameSync(`${file}.tmp`, file);
});
