// Loaded into a gateway with `node --import` by bench/modernCost.mjs --probe: counts the reads
// (`data` chunks) and writes, and their bytes, on the host's stdin/stdout and on every
// upstream's stdout/stdin, so the report can say how requests and answers batched. On SIGUSR2
// it writes the counters to $WARDEN_IO_PROBE_DIR/<pid>.json. Never loaded in a timed figure's
// comparison without being loaded in every instance alike.

import childProcess from 'node:child_process';
import { writeFileSync, renameSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';

const counts = {
  hostReads: 0,
  hostReadBytes: 0,
  hostWrites: 0,
  hostWriteBytes: 0,
  upReads: 0,
  upReadBytes: 0,
  upWrites: 0,
  upWriteBytes: 0,
  scavenges: 0,
  scavengeMs: 0,
  otherGcs: 0,
  otherGcMs: 0,
  seq: 0,
};

// Collections on the main thread: how often the young generation filled is how much was
// allocated, and their time is what a larger allocation per call costs beyond its instructions.
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) {
      counts.scavenges++;
      counts.scavengeMs += entry.duration;
    } else {
      counts.otherGcs++;
      counts.otherGcMs += entry.duration;
    }
  }
}).observe({ entryTypes: ['gc'] });

function countReads(stream, reads, bytes) {
  const emit = stream.emit;
  stream.emit = function (event, chunk, ...rest) {
    if (event === 'data') {
      counts[reads]++;
      counts[bytes] += chunk.length;
    }
    return emit.call(this, event, chunk, ...rest);
  };
}
function countWrites(stream, writes, bytes) {
  const write = stream.write;
  stream.write = function (chunk, ...rest) {
    if (chunk.length > 0) {
      counts[writes]++;
      counts[bytes] += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    }
    return write.call(this, chunk, ...rest);
  };
}

countReads(process.stdin, 'hostReads', 'hostReadBytes');
countWrites(process.stdout, 'hostWrites', 'hostWriteBytes');

const spawn = childProcess.spawn;
childProcess.spawn = function (...args) {
  const child = spawn.apply(this, args);
  if (child.stdout) countReads(child.stdout, 'upReads', 'upReadBytes');
  if (child.stdin) countWrites(child.stdin, 'upWrites', 'upWriteBytes');
  return child;
};
syncBuiltinESMExports();

const dir = process.env.WARDEN_IO_PROBE_DIR;
process.on('SIGUSR2', () => {
  counts.seq++;
  const file = path.join(dir, `${process.pid}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(counts));
  renameSync(`${file}.tmp`, file);
});
