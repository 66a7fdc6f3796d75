import type { Next, RoutedMessage, Stage } from './types.js';

/**
 * How deep into the stages each message has gone, kept off the message itself: a message made
 * from another (derive(), or any copy) starts with no depth of its own, rather than carrying its
 * original's and being refused for it. Weakly held: a message that is done with is let go.
 */
const reached = new WeakMap<RoutedMessage, { depth: number }>();

/**
 * Wraps `terminal` in `stages`, the first outermost. Built once at start-up: a message walks a
 * fixed chain of functions, with no per-message allocation beyond what the stages do and one
 * small record of its depth.
 *
 * A stage may call `next` at most once per message: a second call would send the request to
 * the other side twice. As koa-compose does, that second call is refused (it rejects). A stage
 * that passes a new message inward (confirmation's approved copy, made with derive()) starts
 * that message at the depth it was given.
 */
export function compose(stages: readonly Stage[], terminal: Next): Next {
  let next: Next = guard(stages.length, terminal);
  for (let i = stages.length - 1; i >= 0; i--) {
    const stage = stages[i]!;
    const inner = next;
    next = guard(i, (message) => stage(message, inner));
  }
  return next;
}

function guard(depth: number, run: Next): Next {
  return function enter(message: RoutedMessage) {
    const seen = reached.get(message);
    if (seen === undefined) reached.set(message, { depth });
    else if (seen.depth >= depth)
      return Promise.reject(new Error('a pipeline stage called next() twice for one message'));
    else seen.depth = depth;
    return run(message);
  };
}
