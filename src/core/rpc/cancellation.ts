/**
 * Cancellation for one call, as a plain object. Every call needs one (the host may cancel it,
 * the timeout may fire), and almost none is ever cancelled: an AbortController and its
 * EventTarget listeners cost several microseconds and much garbage per call, measured as a
 * large share of the gateway's CPU in the benchmark (measured). This costs an object.
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
  /**
   * `onCancel` for the hot path: `listener` is an object the caller already has (its own record
   * of the call), so registering costs no closure; `unlisten` removes it.
   */
  listen(listener: CancelListener): void;
  unlisten(listener: CancelListener): void;
}

export interface CancelListener {
  /** Called once, when the signal is cancelled (at once if it already was). */
  onCancelled(reason: Error): void;
}

export class Cancellation implements CancelSignal {
  private _reason: Error | undefined;
  // A call has one to three listeners (timeout, upstream session, a queue), so the first two
  // live in fields: an array per call was most of this class's garbage (measured). In order of
  // registration: `first`, then `second`, then `more`.
  private first: CancelListener | undefined;
  private second: CancelListener | undefined;
  private more: CancelListener[] | undefined;

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
    const { first, second, more } = this;
    this.first = this.second = this.more = undefined;
    first?.onCancelled(reason);
    second?.onCancelled(reason);
    if (more !== undefined) for (const listener of more) listener.onCancelled(reason);
  }

  onCancel(listener: (reason: Error) => void): () => void {
    const entry: CancelListener = { onCancelled: listener };
    this.listen(entry);
    return () => this.unlisten(entry);
  }

  listen(listener: CancelListener): void {
    if (this._reason !== undefined) listener.onCancelled(this._reason);
    else if (this.first === undefined) this.first = listener;
    else if (this.second === undefined) this.second = listener;
    else (this.more ??= []).push(listener);
  }

  unlisten(listener: CancelListener): void {
    // Later listeners move up, so `first`, `second`, `more` stay in registration order.
    if (this.first === listener) {
      this.first = this.second;
      this.second = this.more?.shift();
    } else if (this.second === listener) {
      this.second = this.more?.shift();
    } else if (this.more !== undefined) {
      const i = this.more.indexOf(listener);
      if (i !== -1) this.more.splice(i, 1);
    }
  }
}

function noop(): void {}
