import { rawResult, type RawResponse, type RawResult } from './rawResult.js';

/**
 * What the pipeline returns for a routed message: its result, and, while no stage has changed
 * it, the exact text the upstream sent (so the host gets the upstream's own bytes).
 *
 * A stage never builds an outcome with bytes: the constructor is private, the only way to an
 * outcome with `raw` is `fromUpstream` (the pipeline's terminal), and `changed` makes one
 * without. So a stage that changes a result cannot carry the old bytes with it, and a stage that
 * passes the outcome on unchanged keeps them without having to know they exist. Results are
 * values: a stage that changes one makes a new object, never edits it in place.
 */
export class Outcome<R extends object = Record<string, unknown>> {
  private constructor(
    readonly result: R,
    private readonly untouched: boolean,
    /** The line the result was parsed from, when the peer handed it over with the result. */
    private readonly response: RawResponse | undefined,
  ) {}

  /** A result the gateway made up (an error result, an answer of its own). */
  static of<R extends object>(result: R): Outcome<R> {
    return new Outcome(result, false, undefined);
  }

  /**
   * An upstream's (or the host's) answer exactly as it arrived: `response` is the line it was
   * parsed from; without it, the text attached to `result` itself (attachRawResponse), if any.
   */
  static fromPeer<R extends object>(result: R, response?: RawResponse): Outcome<R> {
    return new Outcome(result, true, response);
  }

  /** The same message with a different result, which never carries the old bytes. */
  changed<S extends object>(result: S): Outcome<S> {
    return new Outcome(result, false, undefined);
  }

  /** The result's text (and bytes, when large) exactly as the upstream sent it, while untouched. */
  get raw(): RawResult | undefined {
    if (!this.untouched) return undefined;
    return this.response === undefined ? rawResult(this.result) : this.response.result();
  }
}
