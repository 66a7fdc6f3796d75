/**
 * Raw JSON lines to and from the gateway as `mcp-warden --config FILE` runs it, served in this
 * process (test/inprocess/served.ts): the in-process twin of `rawSession` from
 * test/integration/harness.ts, for checks on the exact text of each line the host is sent.
 * Every session is stopped by `stopServedRawSessions` (for afterEach), so that no gateway
 * outlives its test in the worker the next test runs in.
 */
import { createInterface } from 'node:readline';
import { start } from './served.js';

type Message = Record<string, unknown>;
type Waiter = {
  readonly pred: (message: Message, line: string) => boolean;
  readonly resolve: (message: Message) => void;
};

export interface ServedRawSession {
  /** Every line the gateway wrote to the host, as written. */
  readonly lines: string[];
  /** Resolves with the exit code the binary would have ended with. */
  readonly exited: Promise<number>;
  stderr(): string;
  /** Writes `text` and a newline to the gateway's stdin (false: wait for it to drain). */
  send(text: string): boolean;
  /** Resolves with the next message written that `pred` accepts. */
  next(pred: Waiter['pred']): Promise<Message>;
  /** Ends the gateway's stdin, as a host going away does, and resolves once it has stopped. */
  close(): Promise<number>;
}

const sessions = new Set<ServedRawSession>();

/** For afterEach: stops every session still running. */
export async function stopServedRawSessions(): Promise<void> {
  await Promise.all([...sessions].map((session) => session.close()));
}

/** Serves `configFile` in this process and speaks raw lines to it. */
export async function servedRawSession(
  configFile: string,
  env: Record<string, string> = {},
): Promise<ServedRawSession> {
  const { serving, log, toGateway, fromGateway } = await start(configFile, { env });
  const lines: string[] = [];
  const waiting = new Set<Waiter>();
  createInterface({ input: fromGateway }).on('line', (line) => {
    lines.push(line);
    let message: Message;
    try {
      message = JSON.parse(line) as Message;
    } catch {
      return;
    }
    for (const waiter of [...waiting])
      if (waiter.pred(message, line)) {
        waiting.delete(waiter);
        waiter.resolve(message);
      }
  });
  const session: ServedRawSession = {
    lines,
    exited: serving.stopped,
    stderr: log.text,
    send: (text) => toGateway.write(`${text}\n`),
    next: (pred) => new Promise((resolve) => waiting.add({ pred, resolve })),
    async close() {
      sessions.delete(session);
      toGateway.end();
      return serving.stopped;
    },
  };
  sessions.add(session);
  return session;
}
