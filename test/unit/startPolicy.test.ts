import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { IdleWatch, TASK_KEEPS_AWAKE_MS } from '../../src/core/upstreams/startPolicy.js';

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('IdleWatch', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  const watch = (keptAwake = () => false) => {
    const onIdle = vi.fn();
    const idle = new IdleWatch({ idleMs: 1000, keptAwake, onIdle });
    idle.ready();
    return { idle, onIdle };
  };

  it('calls a server idle once nothing was in flight for the whole timeout', async () => {
    const { idle, onIdle } = watch();
    const answer = deferred<object>();
    idle.track('tools/call', answer.promise, () => ({}));
    await vi.advanceTimersByTimeAsync(5000);
    expect(onIdle).not.toHaveBeenCalled();
    answer.resolve({ content: [] });
    await vi.advanceTimersByTimeAsync(999);
    expect(onIdle).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(1);
    expect(onIdle).toHaveBeenCalledTimes(1);
  });

  it('keeps a server with a subscription awake, and lets it sleep once that ends', async () => {
    let subscribed = true;
    const { onIdle } = watch(() => subscribed);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(onIdle).not.toHaveBeenCalled();
    subscribed = false;
    await vi.advanceTimersByTimeAsync(1000);
    expect(onIdle).toHaveBeenCalledTimes(1);
  });

  it('keeps a server with a running task awake until the task ends, or is not heard of for long', async () => {
    const { idle, onIdle } = watch();
    await idle.track('tools/call', Promise.resolve({}), () => ({
      task: { taskId: 't1', status: 'working' },
    }));
    await vi.advanceTimersByTimeAsync(60_000);
    expect(onIdle).not.toHaveBeenCalled();
    idle.noteTask({ taskId: 't1', status: 'completed' });
    await vi.advanceTimersByTimeAsync(1000);
    expect(onIdle).toHaveBeenCalledTimes(1);

    const { idle: other, onIdle: otherIdle } = watch();
    other.noteTask({ taskId: 't2', status: 'working' });
    await vi.advanceTimersByTimeAsync(TASK_KEEPS_AWAKE_MS - 2000);
    expect(otherIdle).not.toHaveBeenCalled();
    await vi.advanceTimersByTimeAsync(3000);
    expect(otherIdle).toHaveBeenCalledTimes(1);
  });

  it('does nothing without an idle timeout, or once the server stopped', async () => {
    const onIdle = vi.fn();
    const never = new IdleWatch({ idleMs: undefined, keptAwake: () => false, onIdle });
    never.ready();
    const { idle, onIdle: stoppedIdle } = watch();
    idle.stopped();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(onIdle).not.toHaveBeenCalled();
    expect(stoppedIdle).not.toHaveBeenCalled();
  });
});
