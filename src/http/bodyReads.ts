import type { IncomingMessage } from 'node:http';
import { Sweeper } from './sweeper.js';

/** A request body that stopped coming: its connection is already closed, nothing is answered. */
export class SlowBodyError extends Error {
  override readonly name = 'SlowBodyError';
}

/** How long a request body may pause between two chunks before the request is given up. */
const BODY_IDLE_MS = 15_000;

/** Reads a request body, bounded: the text, or undefined when it passes `max` bytes. */
export type ReadBody = (req: IncomingMessage, max: number) => Promise<string | undefined>;

/** A request body being read: when its last chunk came, and how to give it up. */
interface BodyRead {
  lastChunkAt: number;
  readonly giveUp: () => void;
}

/**
 * The request bodies a listener is reading, looked at each second for one that has paused too
 * long. The listener makes one when it starts and stops it when it closes.
 */
export class BodyReads {
  private readonly reads = new Sweeper<BodyRead>(1000, (read, now) => {
    if (now - read.lastChunkAt >= BODY_IDLE_MS) read.giveUp();
  });

  /** `read` as a function of its own, for what is handed the listener's reader. */
  readonly readBody: ReadBody = (req, max) => this.read(req, max);

  /**
   * The body as text, or undefined when it passes `max` bytes (the rest is not read: the answer
   * closes the connection). A body that pauses for BODY_IDLE_MS (up to a second more) fails the
   * request with SlowBodyError, its connection closed.
   */
  read(req: IncomingMessage, max: number): Promise<string | undefined> {
    const { reads } = this;
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const read: BodyRead = {
        lastChunkAt: Date.now(),
        giveUp: () => {
          reads.delete(read);
          req.removeAllListeners('data');
          // Nothing more is read; the connection goes at once, it has sent nothing for a while.
          req.socket.destroy();
          reject(new SlowBodyError(`the request body paused for ${BODY_IDLE_MS / 1000} s`));
        },
      };
      reads.add(read);
      req.on('data', (chunk: Buffer) => {
        read.lastChunkAt = Date.now();
        size += chunk.length;
        if (size > max) {
          reads.delete(read);
          req.removeAllListeners('data');
          req.pause();
          resolve(undefined);
          return;
        }
        chunks.push(chunk);
      });
      req.on('end', () => {
        reads.delete(read);
        // A small body comes in one chunk: decoded as it is, without copying it into a new buffer.
        resolve(
          size > max
            ? undefined
            : (chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)).toString('utf8'),
        );
      });
      req.on('error', (error) => {
        reads.delete(read);
        reject(error);
      });
    });
  }

  /** Stops looking at the bodies being read (the listener has closed their connections). */
  stop(): void {
    this.reads.stop();
  }
}
