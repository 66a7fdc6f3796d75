import type { ConfirmationConfig } from '../../config/types.js';
import { describeError } from '../../lib/describeError.js';
import type { Logger } from '../../core/logger.js';
import type { CancelSignal } from '../../core/rpc/cancellation.js';
import type { RoutedMessage } from '../../core/pipeline/types.js';
import { spawnChild } from '../../core/transports/childProcess.js';
import { childEnvironment } from '../../core/upstreams/childEnvironment.js';

export interface ConfirmationCommandOptions {
  readonly command: NonNullable<ConfirmationConfig['command']>;
  readonly call: RoutedMessage;
  readonly reason: string;
  readonly timeoutMs: number;
  /** The host's cancellation: the hook is stopped and nothing runs. */
  readonly signal?: CancelSignal;
  readonly logger: Logger;
}

/**
 * Runs the configured confirmation hook with a JSON description of the call on stdin
 * (`{method, server, tool, exposedName, arguments, reason}`; `tool` is what the request addresses:
 * the tool or prompt name, or the resource URI); exit code 0 means yes, anything else no.
 * The hook is the administrator's own program, so it sees the real arguments. It runs in its own
 * process group, stopped (with anything it started) on timeout or cancellation.
 */
export async function runConfirmationCommand(
  options: ConfirmationCommandOptions,
): Promise<'yes' | 'no' | 'timeout'> {
  const { command, call, logger } = options;
  let child;
  try {
    child = await spawnChild({
      command: command.command,
      args: command.args,
      env: childEnvironment(command.env),
      cwd: command.cwd,
    });
  } catch (error) {
    // A hook that cannot start must not approve anything.
    logger.error(`confirmation command failed to start: ${describeError(error)}`);
    return 'no';
  }
  child.process.stdout.resume();
  child.process.stderr.on('data', (chunk: Buffer) =>
    logger.info(`confirmation command: ${chunk.toString().trimEnd()}`),
  );
  child.process.stdin.end(
    JSON.stringify({
      method: call.kind,
      server: call.server,
      tool: call.target,
      exposedName: call.exposedName,
      arguments: call.arguments ?? {},
      reason: options.reason,
    }),
  );
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void child.stop({ graceMs: 200 });
  }, options.timeoutMs);
  const stopListening = options.signal?.onCancel(() => void child.stop({ graceMs: 200 }));
  try {
    const { code } = await child.exited;
    if (options.signal?.cancelled) throw options.signal.reason!;
    if (timedOut) return 'timeout';
    return code === 0 ? 'yes' : 'no';
  } finally {
    clearTimeout(timer);
    stopListening?.();
  }
}
