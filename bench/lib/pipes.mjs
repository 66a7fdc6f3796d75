// Reads and writes per pipe direction between the bench client, a middle process and its
// upstream, counted by the kernel (Linux `perf stat` on the syscall tracepoints, filtered by
// thread and file descriptor), and each process's read and write syscalls of every kind from
// /proc/<pid>/io. How many messages each read or write carries is what decides how often each
// process wakes, and so how much CPU a call costs on both sides of every pipe.

import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** Read and write syscalls the process has made so far (`syscr`, `syscw` of /proc/<pid>/io). */
export function syscalls(pid) {
  const text = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name) => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { reads: field('syscr'), writes: field('syscw') };
}

/**
 * Context switches of the process's main thread so far: `voluntary` (it slept, waiting for input:
 * each is a wake-up later) and `preempted` (it was runnable and lost the CPU to another task).
 */
export function contextSwitches(pid) {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { voluntary: field('voluntary_ctxt_switches'), preempted: field('nonvoluntary_ctxt_switches') };
}

/** User and system CPU time from /proc/<pid>/stat, in microseconds (10 ms ticks on most kernels). */
export function userSystemMicros(pid, ticksPerSecond = 100) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { user: (Number(f[11]) * 1e6) / ticksPerSecond, system: (Number(f[12]) * 1e6) / ticksPerSecond };
}

/**
 * Unix socket inode → its peer's (from `ss`), to pair the two ends of a socketpair: Node gives a
 * child its stdio as socketpairs, whose ends have inodes of their own, where a pipe has one.
 */
function socketPeers() {
  const out = spawnSync('ss', ['-xn'], { encoding: 'utf8' }).stdout ?? '';
  const peers = new Map();
  for (const line of out.split('\n')) {
    const match = /\*\s+(\d+)\s+\*\s+(\d+)/.exec(line);
    if (match !== null) peers.set(match[1], match[2]);
  }
  return peers;
}

/** fd → a name for the channel it is an end of (the same at both ends), for pipes and socketpairs. */
function channelFds(pid, peers) {
  const fds = new Map();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^(pipe|socket):\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match === null) continue;
      const [, kind, inode] = match;
      const peer = peers.get(inode);
      fds.set(Number(fd), kind === 'pipe' || peer === undefined ? inode : [inode, peer].sort().join('-'));
    } catch {
      // closed while we looked
    }
  }
  return fds;
}

function fdOf(fds, channel, pid) {
  for (const [fd, c] of fds) if (c === channel) return fd;
  throw new Error(`process ${pid} holds no end of ${channel}`);
}

/** Whether `perf stat` can count syscall tracepoints here (root or a low perf_event_paranoid). */
export function canCountPipes() {
  const probe = spawnSync('perf', ['stat', '-x,', '-e', 'syscalls:sys_enter_read', 'true'], {
    encoding: 'utf8',
  });
  return probe.status === 0;
}

/**
 * The four directions between the client (this process), the middle process `middle` (its
 * stdin and stdout) and the upstream `upstream` (its stdin and stdout): for each, the sender's
 * thread and fd and the receiver's. libuv reads and writes on the main thread, whose id is the pid.
 */
export function pipeDirections(middle, upstream) {
  const client = process.pid;
  const peers = socketPeers();
  const c = channelFds(client, peers);
  const m = channelFds(middle, peers);
  const u = channelFds(upstream, peers);
  const hostIn = m.get(0);
  const hostOut = m.get(1);
  const upIn = u.get(0);
  const upOut = u.get(1);
  if ([hostIn, hostOut, upIn, upOut].includes(undefined)) throw new Error('stdio is not pipes or sockets');
  return {
    'host→mid': { from: [client, fdOf(c, hostIn, client)], to: [middle, 0] },
    'mid→up': { from: [middle, fdOf(m, upIn, middle)], to: [upstream, 0] },
    'up→mid': { from: [upstream, 1], to: [middle, fdOf(m, upOut, middle)] },
    'mid→host': { from: [middle, 1], to: [client, fdOf(c, hostOut, client)] },
  };
}

/**
 * Starts counting, per direction, the sender's write/writev calls and the receiver's read calls;
 * `stop()` resolves with { [direction]: { writes, reads } }. Enabling the tracepoints puts the
 * three processes' syscalls on a slower path, so a pass counted this way is slower than one that
 * is not: use it to see how messages are batched, not for timings.
 */
export function countPipes(directions, pids) {
  const events = [];
  const keys = [];
  for (const [name, { from, to }] of Object.entries(directions)) {
    for (const sys of ['write', 'writev']) {
      events.push(
        '-e',
        `syscalls:sys_enter_${sys}`,
        '--filter',
        `common_pid == ${from[0]} && fd == ${from[1]}`,
      );
      keys.push([name, 'writes']);
    }
    events.push('-e', 'syscalls:sys_enter_read', '--filter', `common_pid == ${to[0]} && fd == ${to[1]}`);
    keys.push([name, 'reads']);
  }
  const perf = spawn('perf', ['stat', '-x,', '--no-big-num', '-p', pids.join(','), ...events], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let text = '';
  perf.stderr.setEncoding('utf8');
  perf.stderr.on('data', (chunk) => (text += chunk));
  const exited = new Promise((resolve) => perf.on('exit', resolve));
  return {
    /** Resolves once perf has attached (it prints nothing until then, so give it a moment). */
    ready: new Promise((resolve) => setTimeout(resolve, 300)),
    async stop() {
      perf.kill('SIGINT');
      await exited;
      const counts = text
        .split('\n')
        .filter((line) => line.includes('syscalls:'))
        .map((line) => Number(line.split(',')[0]));
      if (counts.length !== keys.length) throw new Error(`perf stat said:\n${text}`);
      const out = {};
      for (const [i, [name, kind]] of keys.entries()) {
        out[name] ??= { writes: 0, reads: 0 };
        out[name][kind] += counts[i] ?? 0;
      }
      return out;
    },
  };
}
