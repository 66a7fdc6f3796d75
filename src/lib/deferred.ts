/**
 * A promise with its resolve and reject, for per-call records on the hot path to extend: the
 * record is the one object a call needs, and getting the two functions costs no executor
 * closure (closures made per call were a large share of the gateway's garbage, measured).
 * `Promise.withResolvers` would do, from Node 22.
 */
export class Deferred<T> {
  readonly promise: Promise<T>;
  readonly resolve: (value: T) => void;
  readonly reject: (error: unknown) => void;

  constructor() {
    this.promise = new Promise<T>(capture);
    this.resolve = captured.resolve as (value: T) => void;
    this.reject = captured.reject;
  }
}

// The executor runs synchronously inside `new Promise`, so one shared function and slot serve
// every Deferred.
const captured: { resolve: (value: never) => void; reject: (error: unknown) => void } = {
  resolve: noop,
  reject: noop,
};

function capture(resolve: (value: never) => void, reject: (error: unknown) => void): void {
  captured.resolve = resolve;
  captured.reject = reject;
}

function noop(): void {}
