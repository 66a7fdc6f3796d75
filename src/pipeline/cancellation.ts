/**
 * Cancellation for one call, as a plain object. Every call needs one (the host may cancel it,
 * the timeout may fire), and almost none is ever cancelled: an AbortController and its
 * EventTarget listeners cost several microseconds and much garbage per call, measured as a
 * large share of the gateway's CPU in the benchmark (bench/, issue 7). This costs an object.
 */
export interface CancelSignal {
  readonly cancelled: boolean;
  /** Why it was cancelled; undefined until then. */
  readonly reason: Error | undefined;
  /**
   * Calls `listener` once, when cancelled (at once if already). Returns a function that
   * removes it; call it when the work is done so listeners do not pile up.
   */
  onCancel(listener: (reason: Error) => void): () => void;
}

export class Cancellation implements CancelSignal {
  private _reason: Error | undefined;
  private listeners: ((reason: Error) => void)[] | undefined;

  /** A cancellation that also follows `parent` (e.g. the host's), until `dispose`. */
  static linkedTo(parent: CancelSignal | undefined): { cancellation: Cancellation; dispose: () => void } {
    const cancellation = new Cancellation();
    const dispose = parent?.onCancel((reason) => cancellation.cancel(reason)) ?? noop;
    return { cancellation, dispose };
  }

  get cancelled(): boolean {
    return this._reason !== undefined;
  }

  get reason(): Error | undefined {
    return this._reason;
  }

  /** The first reason wins; later calls do nothing. */
  cancel(reason: Error): void {
    if (this._reason !== undefined) return;
    this._reason = reason;
    const listeners = this.listeners;
    this.listeners = undefined;
    if (listeners !== undefined) for (const listener of listeners) listener(reason);
  }

  onCancel(listener: (reason: Error) => void): () => void {
    if (this._reason !== undefined) {
      listener(this._reason);
      return noop;
    }
    (this.listeners ??= []).push(listener);
    return () => {
      const list = this.listeners;
      if (list === undefined) return;
      const i = list.indexOf(listener);
      if (i !== -1) list.splice(i, 1);
    };
  }
}

function noop(): void {}
