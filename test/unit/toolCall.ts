import { routedMessage } from '../../src/core/pipeline/routedMessage.js';
import type { Direction, RoutedMessage } from '../../src/core/pipeline/types.js';
import type { Principal } from '../../src/core/principal.js';
import { Cancellation } from '../../src/core/rpc/cancellation.js';

/** A tool call as the router makes one, for the stages' tests: `server__target`, no arguments. */
export function toolCall(
  options: {
    readonly principal?: Principal | undefined;
    readonly server?: string;
    readonly target?: string;
    readonly direction?: Direction;
  } = {},
): RoutedMessage {
  const { principal, server = 'up', target = 'echo', direction = 'upstream' } = options;
  return routedMessage({
    kind: 'tools/call',
    direction,
    exposedName: `${server}__${target}`,
    server,
    target,
    definition: undefined,
    arguments: {},
    params: undefined,
    meta: undefined,
    signal: new Cancellation(),
    onProgress: undefined,
    record: { repairs: [] },
    ...(principal && { principal }),
  });
}
