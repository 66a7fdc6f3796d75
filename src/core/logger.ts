import winston from 'winston';
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

export interface WinstonLogger extends Logger {
  /** Resolves once every line written so far is on disk or handed to stderr. */
  close(): Promise<void>;
}

const LEVELS = ['error', 'warn', 'info', 'debug'] as const;

const lineFormat = winston.format.printf((info) => {
  const { level, message, timestamp, scope, ...rest } = info as Record<string, unknown>;
  const tag = typeof scope === 'string' ? ` [${scope}]` : '';
  const extra = Object.keys(rest).length > 0 ? ` ${JSON.stringify(rest)}` : '';
  return `${String(timestamp)} mcp-warden ${String(level)}${tag}: ${String(message)}${extra}`;
});

/** Redacts the message and every metadata field of a log entry. */
function redactFormat(redact: NonNullable<LoggerOptions['redact']>): winston.Logform.Format {
  return winston.format((info) => {
    for (const key of Object.keys(info)) {
      if (key === 'level' || key === 'timestamp' || key === 'scope') continue;
      const value = info[key];
      info[key] = typeof value === 'string' ? redact.text(value) : redact.value(value);
    }
    return info;
  })();
}

/**
 * winston writing to stderr (and a file when configured). stdout belongs to JSON-RPC:
 * winston's Console transport writes to stdout unless every level is listed in
 * `stderrLevels`, which is why the list is spelled out here.
 */
export interface LoggerOptions {
  /** Applied to every line before it is written: the diagnostic log gets the audit's redaction. */
  readonly redact?: { readonly text: (text: string) => string; readonly value: (value: unknown) => unknown };
}

export function createLogger(config: LogConfig, options: LoggerOptions = {}): WinstonLogger {
  const transports: winston.transport[] = [
    new winston.transports.Console({ stderrLevels: [...LEVELS], consoleWarnLevels: [] }),
  ];
  if (config.file !== undefined) transports.push(new winston.transports.File({ filename: config.file }));
  const root = winston.createLogger({
    level: config.level,
    levels: { error: 0, warn: 1, info: 2, debug: 3 },
    format: winston.format.combine(
      winston.format.timestamp(),
      winston.format.splat(),
      ...(options.redact ? [redactFormat(options.redact)] : []),
      lineFormat,
    ),
    transports,
  });
  const wrap = (w: winston.Logger, scope?: string): Logger => ({
    error: (m, meta) => w.error(m, meta),
    warn: (m, meta) => w.warn(m, meta),
    info: (m, meta) => w.info(m, meta),
    debug: (m, meta) => w.debug(m, meta),
    child: (s) => {
      const nested = scope === undefined ? s : `${scope}/${s}`;
      return wrap(w.child({ scope: nested }), nested);
    },
  });
  return {
    ...wrap(root),
    close: () =>
      new Promise<void>((resolve) => {
        // winston ≥ 3.19 flushes its file transport on 'finish'.
        root.once('finish', () => resolve());
        root.end();
      }),
  };
}

/** A logger that drops everything: for commands whose output must stay clean. */
export const silentLogger: Logger = {
  error: () => {},
  warn: () => {},
  info: () => {},
  debug: () => {},
  child: () => silentLogger,
};
