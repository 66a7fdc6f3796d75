import type { ChainHead } from './chain.js';
import { checkpointMembersText, checkpointMessage, type CheckpointSigner } from './checkpoint.js';

/**
 * When a writer signs its chain: a `checkpoint` record every `intervalMs` when records were
 * written since the last one, and when it closes (see checkpoint.ts for what the signature
 * proves). Holds what the writer needs to decide and to make the record's members.
 */
export class Checkpointer {
  readonly #signer: CheckpointSigner;
  readonly #writer: string;
  /** `"session":...` for the writer's own records, or empty. */
  readonly #sessionMember: string;
  readonly #timer: NodeJS.Timeout;
  /** Records this writer wrote since its last checkpoint (a checkpoint of nothing new is skipped). */
  #sinceCheckpoint = 0;
  /** A checkpoint is queued and not yet written. */
  #queued = false;

  constructor(options: {
    readonly signer: CheckpointSigner;
    readonly intervalMs: number;
    readonly writer: string;
    readonly sessionMember: string;
    /** Called at each interval: the writer queues a checkpoint when `wanted` says so. */
    readonly tick: () => void;
  }) {
    this.#signer = options.signer;
    this.#writer = options.writer;
    this.#sessionMember = options.sessionMember;
    this.#timer = setInterval(options.tick, options.intervalMs);
    this.#timer.unref();
  }

  /**
   * Whether to queue a checkpoint now: none is queued, and this writer wrote records since its
   * last one or has some queued (`queuedRecords`). A yes counts the checkpoint as queued.
   */
  wanted(queuedRecords: boolean): boolean {
    if (this.#queued) return false;
    if (this.#sinceCheckpoint === 0 && !queuedRecords) return false;
    this.#queued = true;
    return true;
  }

  /** The members of a checkpoint record sealed after `head` at `ts`. */
  members(head: ChainHead, ts: string): string {
    const signer = this.#signer;
    const seq = head.seq + 1;
    const sig = signer.sign(
      checkpointMessage({ writer: this.#writer, seq, ts, prev: head.hash, records: seq }),
    );
    return checkpointMembersText(seq, signer.keyId, sig, this.#sessionMember);
  }

  /** A record of the writer's other than a checkpoint went into the file. */
  counted(): void {
    this.#sinceCheckpoint++;
  }

  /** The queued checkpoint went into the file. */
  written(): void {
    this.#sinceCheckpoint = 0;
    this.#queued = false;
  }

  /** The queued checkpoint was not written: the next one covers the same records. */
  dropped(): void {
    this.#queued = false;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
