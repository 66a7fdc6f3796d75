/**
 * A gateway served in this process (`startServing` on a config file) driven as raw JSON-RPC
 * lines, with no SDK Client in between: the in-process twin of a test that writes to a spawned
 * gateway's stdin and reads its stdout line by line. Each answer is kept by its id.
 */
import { PassThrough } from 'node:stream';
import { createInterface } from 'node:readline';
import { startServing } from '../../src/commands/serve.js';
import { logWatcher, NO_MANAGED } from '../integration/harness.js';

export interface ServedRaw {
  /** Writes one message as a line on the gateway's stdin. */
  send(message: object): void;
  /** Resolves with the answer carrying `id`, once it has come. */
  answer(id: number | string): Promise<object>;
  /** The log lines the binary would write to stderr. */
  stderr(): string;
  /** Ends stdin, as a host leaving does, and waits for the gateway to stop. */
  close(): Promise<void>;
}

/**
 * Serves `configFile` over two in-memory streams. The harness's variables (no managed settings,
 * a private state folder) are set while it serves, unless the test process already has them.
 */
export async function serveRaw(configFile: string): Promise<ServedRaw> {
  const before = Object.fromEntries(Object.keys(NO_MANAGED).map((key) => [key, process.env[key]]));
  Object.assign(process.env, NO_MANAGED);
  const input = new PassThrough();
  const output = new PassThrough();
  const log = logWatcher();
  const giveBack = () => {
    for (const [key, value] of Object.entries(before))
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
  };
  const serving = await startServing({ config: configFile, stdio: { input, output }, log: log.append }).catch(
    (error: unknown) => {
      giveBack();
      throw error;
    },
  );
  void serving.stopped.then(giveBack);
  const answers = new Map<number | string, object>();
  const waiting = new Map<number | string, (message: object) => void>();
  createInterface({ input: output }).on('line', (line) => {
    const message = JSON.parse(line) as { id?: number | string };
    if (message.id === undefined) return;
    answers.set(message.id, message);
    waiting.get(message.id)?.(message);
  });
  return {
    send: (message) => void input.write(`${JSON.stringify(message)}\n`),
    answer: (id) =>
      new Promise<object>((resolve) => {
        const known = answers.get(id);
        if (known !== undefined) resolve(known);
        else waiting.set(id, resolve);
      }),
    stderr: log.text,
    close: async () => {
      input.end();
      await serving.stopped;
    },
  };
}
