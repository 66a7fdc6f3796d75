import type { Next, RoutedMessage, Stage } from './types.js';

/** What compose writes on a message: how deep into the stages it has gone. */
const DEPTH = Symbol('mcp-warden.pipelineDepth');
type Tracked = RoutedMessage & { [DEPTH]?: number };

/**
 * Wraps `terminal` in `stages`, the first outermost. Built once at start-up: a message walks a
 * fixed chain of functions, with no per-message allocation beyond what the stages do.
 *
 * A stage may call `next` at most once per message: a second call would send the request to
 * the other side twice. As koa-compose does, that second call is refused (it rejects); here the
 * depth reached is kept on the message itself, so the check costs no closure per message. A
 * stage that passes a copy inward (confirmation's approved copy) starts the copy at the depth
 * it was given.
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
  return function enter(message: Tracked) {
    const reached = message[DEPTH];
    if (reached !== undefined && reached >= depth)
      return Promise.reject(new Error('a pipeline stage called next() twice for one message'));
    message[DEPTH] = depth;
    return run(message);
  };
}
