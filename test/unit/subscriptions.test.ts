import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/core/logger.js';
import type { CancelSignal } from '../../src/core/rpc/cancellation.js';
import { ResourceSubscriptions, restoreSubscriptions } from '../../src/core/upstreams/subscriptions.js';

/** A promise settled from outside, standing in for an upstream's answer. */
function answer() {
  let resolve!: (value: object) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<object>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // The tests that reject do not await the answer; the observer's own handler is what matters.
  promise.catch(() => {});
  return { promise, resolve: () => resolve({}), reject: () => reject(new Error('upstream says no')) };
}

/** Lets the observer's `then` handlers run. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

function track(subs: ResourceSubscriptions, method: string, uri: string) {
  const pending = answer();
  subs.observe(method, { uri }, pending.promise);
  return pending;
}

describe('ResourceSubscriptions', () => {
  it('adds a URI once the server accepts the subscribe, and only once', async () => {
    const subs = new ResourceSubscriptions();
    const first = track(subs, 'resources/subscribe', 'a://1');
    expect(subs.has('a://1')).toBe(false);
    first.resolve();
    // A host that subscribes again (say after resources/list_changed) does not make a duplicate.
    track(subs, 'resources/subscribe', 'a://1').resolve();
    track(subs, 'resources/subscribe', 'a://2').resolve();
    await settled();
    expect(subs.uris).toEqual(['a://1', 'a://2']);
  });

  it('does not add a URI whose subscribe the server refused', async () => {
    const subs = new ResourceSubscriptions();
    track(subs, 'resources/subscribe', 'a://1').reject();
    await settled();
    expect(subs.uris).toEqual([]);
  });

  it('removes a URI at the unsubscribe, whatever the server answers', async () => {
    const subs = new ResourceSubscriptions();
    track(subs, 'resources/subscribe', 'a://1').resolve();
    await settled();
    const unsubscribe = track(subs, 'resources/unsubscribe', 'a://1');
    expect(subs.uris).toEqual([]);
    unsubscribe.reject();
    await settled();
    expect(subs.uris).toEqual([]);
  });

  it('keeps the host’s last word: a subscribe answered after a later unsubscribe is not recorded', async () => {
    const subs = new ResourceSubscriptions();
    const subscribe = track(subs, 'resources/subscribe', 'a://1');
    track(subs, 'resources/unsubscribe', 'a://1').resolve();
    subscribe.resolve();
    await settled();
    expect(subs.uris).toEqual([]);

    // A subscribe sent after the unsubscribe counts again.
    const before = track(subs, 'resources/subscribe', 'a://1');
    track(subs, 'resources/unsubscribe', 'a://1');
    const after = track(subs, 'resources/subscribe', 'a://1');
    after.resolve();
    before.resolve();
    await settled();
    expect(subs.uris).toEqual(['a://1']);
  });

  it('ignores other methods and requests without a string uri', async () => {
    const subs = new ResourceSubscriptions();
    track(subs, 'resources/read', 'a://1').resolve();
    const noUri = answer();
    const returned = subs.observe('resources/subscribe', { uri: 7 }, noUri.promise);
    expect(returned).toBe(noUri.promise);
    noUri.resolve();
    await settled();
    expect(subs.uris).toEqual([]);
  });
});

function recordingLogger() {
  const lines: string[] = [];
  const logger: Logger = {
    error: (m) => lines.push(`error: ${m}`),
    warn: (m) => lines.push(`warn: ${m}`),
    info: (m) => lines.push(`info: ${m}`),
    debug: () => {},
    child: () => logger,
  };
  return { logger, lines };
}

async function subscribedTo(...uris: string[]): Promise<ResourceSubscriptions> {
  const subs = new ResourceSubscriptions();
  for (const uri of uris) track(subs, 'resources/subscribe', uri).resolve();
  await settled();
  return subs;
}

describe('restoreSubscriptions', () => {
  const base = { supported: true, timeoutMs: 1000, server: 'up', ended: () => false };

  it('sends every subscribe before it first yields, and logs what it restored', async () => {
    const subs = await subscribedTo('a://1', 'a://2');
    const { logger, lines } = recordingLogger();
    const sent: string[] = [];
    const done = restoreSubscriptions({
      ...base,
      subscriptions: subs,
      log: logger,
      subscribe: (uri) => {
        sent.push(uri);
        return Promise.resolve({});
      },
    });
    // Synchronously: nothing the host sends next can overtake them.
    expect(sent).toEqual(['a://1', 'a://2']);
    await done;
    expect(lines).toEqual(['info: re-subscribed to 2 of 2 resources after the restart']);
  });

  it('logs a URI that fails, naming server and URI, and still restores the others', async () => {
    const subs = await subscribedTo('a://1', 'a://2', 'a://3');
    const { logger, lines } = recordingLogger();
    await restoreSubscriptions({
      ...base,
      subscriptions: subs,
      log: logger,
      subscribe: (uri) =>
        uri === 'a://2' ? Promise.reject(new Error('Resource not found')) : Promise.resolve({}),
    });
    expect(lines).toEqual([
      'warn: could not re-subscribe server "up" to "a://2" after its restart; the host will get no updates for it: Resource not found',
      'info: re-subscribed to 2 of 3 resources after the restart',
    ]);
    // The host never unsubscribed: the next restart tries again.
    expect(subs.uris).toEqual(['a://1', 'a://2', 'a://3']);
  });

  it('bounds each subscribe: no answer within timeoutMs cancels it and logs it', async () => {
    const subs = await subscribedTo('a://1');
    const { logger, lines } = recordingLogger();
    let signal: CancelSignal | undefined;
    await restoreSubscriptions({
      ...base,
      timeoutMs: 5,
      subscriptions: subs,
      log: logger,
      subscribe: (_uri, s) => {
        signal = s;
        return new Promise((_resolve, reject) => s.onCancel(reject));
      },
    });
    expect(signal?.cancelled).toBe(true);
    expect(lines[0]).toBe(
      'warn: could not re-subscribe server "up" to "a://1" after its restart; the host will get no updates for it: no answer within 5 ms',
    );
  });

  it('warns and keeps the URIs when the server no longer declares resources.subscribe', async () => {
    const subs = await subscribedTo('a://1', 'a://2');
    const { logger, lines } = recordingLogger();
    const sent: string[] = [];
    await restoreSubscriptions({
      ...base,
      supported: false,
      subscriptions: subs,
      log: logger,
      subscribe: (uri) => (sent.push(uri), Promise.resolve({})),
    });
    expect(sent).toEqual([]);
    expect(lines).toEqual([
      'warn: server "up" no longer declares resources.subscribe; the host will get no updates for "a://1", "a://2" until it does',
    ]);
    expect(subs.uris).toEqual(['a://1', 'a://2']);
  });

  it('says nothing when there is nothing to restore, or when the connection ended meanwhile', async () => {
    const { logger, lines } = recordingLogger();
    const fail = () => Promise.reject(new Error('the gateway is shutting down'));
    await restoreSubscriptions({
      ...base,
      subscriptions: new ResourceSubscriptions(),
      log: logger,
      subscribe: fail,
    });
    await restoreSubscriptions({
      ...base,
      subscriptions: await subscribedTo('a://1'),
      log: logger,
      subscribe: fail,
      ended: () => true,
    });
    expect(lines).toEqual([]);
  });
});
