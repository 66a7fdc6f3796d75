import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import type { LogConfig } from '../config/types.js';

/**
 * The logging surface every part receives (never a global). Kept to four methods so tests can
 * pass a recording fake.
 */
export interface Logger {
  error(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
  info(message: string, meta?: Record<string, unknown>): void;
  debug(message: string, meta?: Record<string, unknown>): void;
  /** A logger whose lines are tagged with `scope` (e.g. a server name). */
  child(scope: string): Logger;
}

export interface ClosableLogger extends Logger {
  /** Resolves once every line written so far is on disk or handed to stderr. */
  close(): Promise<void>;
}

const LEVELS = { error: 0, warn: 1, info: 2, debug: 3 } as const;
type Level = keyof typeof LEVELS;

export interface LoggerOptions {
  /** Applied to every line before it is written: the diagnostic log gets the audit's redaction. */
  readonly redact?: { readonly text: (text: string) => string; readonly value: (value: unknown) => unknown };
  /**
   * Where each line goes instead of stderr (a log file still gets it too): a gateway served
   * inside another program, such as the in-process tests, keeps its lines apart from that program's.
   */
  readonly write?: (line: string) => void;
}

/**
 * Lines of text to stderr (stdout belongs to JSON-RPC), and to a file when configured:
 * `TIME mcp-warden LEVEL [SCOPE]: MESSAGE {META}`. Written by hand rather than with a logging
 * library: this is all the gateway needs of one, and loading winston and its dependencies was
 * about a sixth of a stdio gateway's start-up (measured) and 8 MB of its memory.
 */
export function createLogger(config: LogConfig, options: LoggerOptions = {}): ClosableLogger {
  const threshold = LEVELS[config.level];
  const file = config.file === undefined ? undefined : openLogFile(config.file);
  const { redact } = options;
  const toStderr = (line: string) => {
    if (stderrOpen()) process.stderr.write(line);
  };
  const out = options.write ?? toStderr;
  const write = (
    level: Level,
    message: string,
    meta: Record<string, unknown> | undefined,
    scope?: string,
  ) => {
    if (LEVELS[level] > threshold) return;
    let text =
      meta !== undefined && typeof meta.message === 'string' && meta.message !== ''
        ? `${message} ${meta.message}`
        : message;
    if (redact) text = redact.text(text);
    let extra = '';
    if (meta !== undefined) {
      const rest: Record<string, unknown> = {};
      let any = false;
      for (const key of Object.keys(meta)) {
        if (key === 'level' || key === 'message' || key === 'timestamp' || key === 'scope') continue;
        const value = meta[key];
        rest[key] =
          redact === undefined ? value : typeof value === 'string' ? redact.text(value) : redact.value(value);
        any = true;
      }
      if (any) extra = ` ${JSON.stringify(rest)}`;
    }
    const tag = scope === undefined ? '' : ` [${scope}]`;
    const line = `${new Date().toISOString()} mcp-warden ${level}${tag}: ${text}${extra}\n`;
    out(line);
    if (file !== undefined && !file.destroyed) file.write(line);
  };
  const scoped = (scope?: string): Logger => ({
    error: (m, meta) => write('error', m, meta, scope),
    warn: (m, meta) => write('warn', m, meta, scope),
    info: (m, meta) => write('info', m, meta, scope),
    debug: (m, meta) => write('debug', m, meta, scope),
    child: (s) => scoped(scope === undefined ? s : `${scope}/${s}`),
  });
  return {
    ...scoped(),
    close: () =>
      new Promise<void>((resolve) => {
        if (file === undefined || file.closed) return resolve();
        file.once('close', () => resolve());
        file.end();
      }),
  };
}

let stderrBroken = false;
let stderrWatched = false;

/**
 * Whether stderr still has a reader. Once a write to it fails (its reader is gone: EPIPE), it
 * is written no more. Without a listener, that failure is an uncaught exception, whose report
 * is logged to stderr, which fails again: a loop on the microtask queue that keeps a core busy
 * and starves timers and signal handlers, so SIGTERM is never acted on. The listener is set
 * on first use, for every writer of stderr in the process.
 */
function stderrOpen(): boolean {
  if (!stderrWatched) {
    stderrWatched = true;
    process.stderr.on('error', () => {
      stderrBroken = true;
    });
  }
  return !stderrBroken && !process.stderr.destroyed;
}

/** The log file, appended to (its folder made if missing); a failure to write it is said once on stderr. */
function openLogFile(file: string): WriteStream {
  try {
    mkdirSync(path.dirname(file), { recursive: true });
  } catch {
    // The stream's own error below says why the file cannot be written.
  }
  const stream = createWriteStream(file, { flags: 'a' });
  let told = false;
  stream.on('error', (error) => {
    if (told) return;
    told = true;
    if (stderrOpen())
      process.stderr.write(
        `${new Date().toISOString()} mcp-warden error: cannot write the log file ${file}: ${error.message}\n`,
      );
  });
  return stream;
}

/** A logger that drops everything: for commands whose output must stay clean. */
export const silentLogger: Logger = {
  error: () => {},
  warn: () => {},
  info: () => {},
  debug: () => {},
  child: () => silentLogger,
};
