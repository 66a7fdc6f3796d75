import { AuditWriteError } from './writeError.js';

/**
 * While writing fails, the log tries again on its own after these delays (the last repeats), so
 * it recovers within about two seconds of the disk becoming writable even when nothing is
 * appended meanwhile: `block` mode refuses calls while unhealthy, so without a timer nothing
 * would ever try again until some lifecycle event happened to be written.
 */
const RETRY_DELAYS_MS = [250, 500, 1000, 2000] as const;

export type AuditStatus =
  /** Writing failed after working (or failed at open); `lastError` says why. */
  | { readonly kind: 'failed'; readonly error: AuditWriteError }
  /** Writing works again; `lost` records were dropped meanwhile (an `audit_gap` record says so). */
  | { readonly kind: 'recovered'; readonly lost: number }
  /** Rotation failed; records keep going into the current file, beyond `maxBytes`. */
  | { readonly kind: 'rotate_failed'; readonly error: AuditWriteError };

export interface WriterHealthOptions {
  readonly file: string;
  /** The `onFailure` in force, read at each failure (it may be retuned). */
  readonly onFailure: () => 'block' | 'continue';
  readonly onStatus: ((status: AuditStatus) => void) | undefined;
  /** Drops the open descriptor: it may be what is broken (a removed mount, EBADF). */
  readonly closeFile: () => void;
  readonly isClosed: () => boolean;
  /** Tries writing again (whatever is queued, or only the gap record). */
  readonly retry: () => void;
}

/**
 * Whether a writer's records reach the file: the last failure, the records lost since the last
 * successful write (counted in the next `audit_gap` record), and the timer that tries again.
 */
export class WriterHealth {
  readonly #options: WriterHealthOptions;
  #healthy = true;
  #lastError: AuditWriteError | undefined;
  #lost = 0;
  #lostSince: string | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retries = 0;

  constructor(options: WriterHealthOptions) {
    this.#options = options;
  }

  get healthy(): boolean {
    return this.#healthy;
  }

  get lastError(): AuditWriteError | undefined {
    return this.#lastError;
  }

  get lost(): number {
    return this.#lost;
  }

  /** When the first of the records lost was attempted. */
  get lostSince(): string | undefined {
    return this.#lostSince;
  }

  /** Records a failure that cost `lost` records; returns it for the caller to throw or not. */
  fail(error: unknown, ts: string, lost: number): AuditWriteError {
    if (lost > 0) {
      this.#lost += lost;
      this.#lostSince ??= ts;
    }
    return this.markFailed(error);
  }

  markFailed(error: unknown): AuditWriteError {
    const wrapped = new AuditWriteError(this.#options.file, this.#options.onFailure(), error);
    this.#lastError = wrapped;
    // Reopen on the next record: the descriptor may be what is broken (a removed mount, EBADF).
    this.#options.closeFile();
    if (this.#healthy) {
      this.#healthy = false;
      this.#notify({ kind: 'failed', error: wrapped });
    }
    this.#scheduleRetry();
    return wrapped;
  }

  /** Rotation failed: kept as the last error and told, not a failed write. */
  rotateFailed(error: unknown): void {
    const wrapped = new AuditWriteError(this.#options.file, this.#options.onFailure(), error);
    this.#lastError = wrapped;
    this.#notify({ kind: 'rotate_failed', error: wrapped });
  }

  /** An `audit_gap` record accounting for `records` lost ones was written. */
  gapWritten(records: number): void {
    this.#lost -= records;
    this.#lostSince = undefined;
  }

  /** A write went through: healthy again, told with how many records the gap record counted. */
  succeeded(recoveredFrom: number): void {
    if (this.#healthy) return;
    this.#healthy = true;
    this.#retries = 0;
    this.stop();
    this.#notify({ kind: 'recovered', lost: recoveredFrom });
  }

  /** No more retries (the log is closed). */
  stop(): void {
    clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
  }

  /** Tries writing again after a bounded delay while unhealthy; never keeps the process alive. */
  #scheduleRetry(): void {
    if (this.#options.isClosed() || this.#retryTimer !== undefined) return;
    const delay = RETRY_DELAYS_MS[Math.min(this.#retries, RETRY_DELAYS_MS.length - 1)]!;
    this.#retries++;
    this.#retryTimer = setTimeout(this.#retry, delay);
    this.#retryTimer.unref();
  }

  readonly #retry = (): void => {
    this.#retryTimer = undefined;
    if (this.#options.isClosed() || this.#healthy) return;
    // Whatever is queued goes too; with nothing queued, the gap record is the probe.
    this.#options.retry();
  };

  #notify(status: AuditStatus): void {
    try {
      this.#options.onStatus?.(status);
    } catch {
      // A failing listener must not turn a handled audit failure into an unhandled one.
    }
  }
}
