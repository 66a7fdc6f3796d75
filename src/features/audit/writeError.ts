import { WardenError } from '../../core/errors.js';

/**
 * The audit file cannot be written. A `DENIED` WardenError, so in `block` mode the pipeline can
 * let it through to the host as an `isError` result with this message.
 */
export class AuditWriteError extends WardenError {
  readonly file: string;
  /** The errno code (`ENOSPC`, `EACCES`, `EISDIR`, ...), `SHORT_WRITE` or `CLOSED`. */
  readonly reason: string;
  readonly detail: string;

  constructor(file: string, onFailure: 'block' | 'continue', cause: unknown) {
    const reason =
      cause instanceof Error && typeof (cause as NodeJS.ErrnoException).code === 'string'
        ? String((cause as NodeJS.ErrnoException).code)
        : 'UNKNOWN';
    const detail = cause instanceof Error ? cause.message : String(cause);
    super(
      'DENIED',
      onFailure === 'block'
        ? `Calls are refused: the audit log "${file}" cannot be written (${detail}) and audit.onFailure is "block".`
        : `The audit log "${file}" cannot be written (${detail}); calls continue unaudited (audit.onFailure is "continue").`,
      { cause },
    );
    this.file = file;
    this.reason = reason;
    this.detail = detail;
  }
}

/** An error with an errno-like `code`, for failures that are not the system's own. */
export function codedError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${message}`), { code });
}
