import { enterDepth, pipelineDepth } from './routedMessage.js';
import type { Next, RoutedMessage, Stage } from './types.js';

export { DEPTH } from './routedMessage.js';

/**
 * Wraps `terminal` in `stages`, the first outermost. Built once at start-up: a message walks a
 * fixed chain of functions, with no per-message allocation beyond what the stages do.
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
    const seen = pipelineDepth(message);
    if (seen !== undefined && seen >= depth)
      return Promise.reject(new Error('a pipeline stage called next() twice for one message'));
    enterDepth(message, depth);
    return run(message);
  };
}
