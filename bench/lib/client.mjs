// A lean JSON-RPC client over a child's stdio: newline-delimited, integer ids, a pending map by
// id, one JSON.parse per answer. It must cost the same in every configuration and stay small
// next to what is measured, so it has no per-request timers: callers bound whole phases with
// `deadline()`, and a child that exits fails everything pending at once.

import { spawn } from 'node:child_process';
import { lineSplitter } from './lines.mjs';

const STDERR_TAIL = 4096;

/** Rejects with a message naming `what` unless `promise` settles within `ms`. */
export function deadline(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export class RpcChild {
  /**
   * Spawns `command args` in its own process group (so `kill()` reaches anything it started)
   * and speaks JSON-RPC over its stdin/stdout. `label` names it in errors.
   */
  constructor({ label, command, args, env }) {
    this.label = label;
    this.pending = new Map();
    this.nextId = 1;
    this.stderrTail = '';
    this.exited = null;
    this.child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env, detached: true });
    this.pid = this.child.pid;
    this.exitPromise = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exited = { code, signal };
        this.failAll(new Error(`${label} exited (${signal ?? `code ${code}`})${this.describeStderr()}`));
        resolve(this.exited);
      });
    });
    this.child.on('error', (error) => this.failAll(new Error(`${label}: ${error.message}`)));
    // A child that died mid-write: the exit handler reports it.
    this.child.stdin.on('error', () => {});
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on(
      'data',
      lineSplitter((line) => this.onLine(line)),
    );
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_TAIL);
    });
  }

  describeStderr() {
    const tail = this.stderrTail.trim();
    return tail === '' ? '' : `; its stderr ended with:\n${tail}`;
  }

  onLine(line) {
    if (line.length === 0) return;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this.failAll(new Error(`${this.label} wrote a line that is not JSON: ${line.slice(0, 200)}`));
      return;
    }
    if (msg.id === undefined || msg.id === null) return; // notifications (e.g. list_changed)
    const entry = this.pending.get(msg.id);
    if (entry === undefined) return;
    this.pending.delete(msg.id);
    if (msg.error !== undefined)
      entry.reject(new Error(`${this.label}: ${entry.method} failed: ${JSON.stringify(msg.error)}`));
    else entry.resolve(msg.result);
  }

  failAll(error) {
    this.failure ??= error;
    for (const entry of this.pending.values()) entry.reject(error);
    this.pending.clear();
  }

  /**
   * Sends a request and resolves with its `result`. `paramsJson` is the params already
   * serialized, so hot loops serialize their (constant) params once, not per call.
   */
  request(method, paramsJson) {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { method, resolve, reject });
      this.child.stdin.write(
        paramsJson === undefined
          ? `{"jsonrpc":"2.0","id":${id},"method":"${method}"}\n`
          : `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${paramsJson}}\n`,
      );
    });
  }

  notify(method) {
    this.child.stdin.write(`{"jsonrpc":"2.0","method":"${method}"}\n`);
  }

  /** Closes stdin (how a host says goodbye) and waits for the exit; kills the group after `graceMs`. */
  async close(graceMs = 3000) {
    if (this.exited === null) {
      this.closing = true;
      this.child.stdin.end();
      const timer = setTimeout(() => this.kill(), graceMs);
      await this.exitPromise;
      clearTimeout(timer);
    }
    return this.exited;
  }

  /** SIGKILL to the whole process group; safe to call at any time, also from an exit handler. */
  kill() {
    try {
      process.kill(-this.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}
