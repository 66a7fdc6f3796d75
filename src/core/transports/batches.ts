import { idKey, RpcErrorCode, serializeMessage, type RequestId } from '../protocol/jsonRpc.js';

/**
 * Answers the gateway holds for open batches at most, counting every request of every batch not
 * yet answered whole (and the error answers of their invalid elements). The same count the SDK's
 * HTTP server transport allows in one POST, so a host meets one bound on stdio and over HTTP; a
 * host that needs more in flight at once can send them one by one.
 */
export const MAX_BATCH_ANSWERS = 100;

/** Why a batch of `count` elements is refused for its size alone, or undefined. */
export function oversizeBatch(count: number): string | undefined {
  return count > MAX_BATCH_ANSWERS
    ? `a JSON-RPC batch of ${count} elements is over the bound of ${MAX_BATCH_ANSWERS} per batch; send fewer at once`
    : undefined;
}

/**
 * Why a batch of `count` answers cannot be opened while `held` answers to earlier batches of the
 * same connection are still owed, or undefined when it can.
 */
export function overOwed(held: number, count: number): string | undefined {
  if (held + count <= MAX_BATCH_ANSWERS) return undefined;
  return (
    `${held} answers to earlier batches are still owed, and this batch's ${count} would pass ` +
    `the bound of ${MAX_BATCH_ANSWERS}; wait for their answers`
  );
}

/** The answers one batch is owed, and those it has. */
interface Batch {
  waiting: number;
  readonly answers: string[];
  /** What it counts against `MAX_BATCH_ANSWERS` while open. */
  counted: number;
}

/**
 * The answers owed to JSON-RPC batches, which MCP allowed in protocol revision 2025-03-26 only: a
 * batch's requests are served one by one like any others, and their answers are held here until
 * the last one is in, then written as one array, in the order they were completed. A request the
 * host cancels is owed nothing (the gateway answers no cancelled request), so it stops being
 * waited for.
 */
export class BatchAnswers {
  private readonly owners = new Map<string | number, Batch>();
  /** Answers held or owed by open batches, against `MAX_BATCH_ANSWERS`. */
  private held = 0;

  /**
   * Why a batch with `requests` requests and `errors` invalid elements cannot be opened, or
   * undefined when it can: its answers would pass `MAX_BATCH_ANSWERS`, alone or with those of
   * batches still open. A batch of notifications and invalid elements only is answered at once,
   * so it holds nothing.
   */
  refusal(requests: number, errors: number): string | undefined {
    if (requests === 0) return undefined;
    const count = requests + errors;
    const oversize = oversizeBatch(count);
    if (oversize !== undefined) return oversize;
    return overOwed(this.held, count);
  }

  /**
   * A batch with requests under `ids` and the error answers its invalid elements already got.
   * Returns the array's text when nothing is left to wait for, undefined otherwise.
   */
  open(ids: readonly RequestId[], errors: readonly string[]): string | undefined {
    const batch: Batch = { waiting: 0, answers: [...errors], counted: 0 };
    for (const id of ids) {
      const key = idKey(id);
      // A host reusing an id within one batch gets one answer under it, as the other would be lost.
      if (this.owners.has(key)) continue;
      this.owners.set(key, batch);
      batch.waiting++;
    }
    if (batch.waiting > 0) batch.counted = batch.waiting + batch.answers.length;
    this.held += batch.counted;
    return this.settled(batch);
  }

  /** Whether an answer under `id` is owed to a batch. */
  owes(id: RequestId): boolean {
    return this.owners.size > 0 && this.owners.has(idKey(id));
  }

  /** Files an answer; returns the batch's array text when it was the last one owed. */
  answer(id: RequestId, text: string): string | undefined {
    const batch = this.take(id);
    if (batch === undefined) return undefined;
    batch.answers.push(text);
    return this.settled(batch);
  }

  /** The host cancelled this request: it is owed no answer. Returns the array text if now complete. */
  cancelled(id: RequestId): string | undefined {
    const batch = this.take(id);
    return batch === undefined ? undefined : this.settled(batch);
  }

  private take(id: RequestId): Batch | undefined {
    const key = idKey(id);
    const batch = this.owners.get(key);
    if (batch === undefined) return undefined;
    this.owners.delete(key);
    batch.waiting--;
    return batch;
  }

  private settled(batch: Batch): string | undefined {
    if (batch.waiting > 0) return undefined;
    this.held -= batch.counted;
    batch.counted = 0;
    if (batch.answers.length === 0) return undefined;
    return `[${batch.answers.join(',')}]`;
  }
}

/**
 * The answer to a batch refused whole (see `BatchAnswers.refusal`, `oversizeBatch`, or a
 * revision without batches): -32600 naming the reason
 * under each request's id, with the errors its invalid elements got, as one array. None of its
 * elements is served, notifications included: serving a part would leave the host guessing
 * which part ran.
 */
export function refusedBatch(ids: readonly RequestId[], errors: readonly string[], reason: string): string {
  const error = { code: RpcErrorCode.InvalidRequest, message: `Invalid message: ${reason}` };
  const refused = ids.map((id) => serializeMessage({ jsonrpc: '2.0', id, error }));
  // A batch of notifications only still learns why nothing of it was served.
  if (refused.length + errors.length === 0) return serializeMessage({ jsonrpc: '2.0', id: null, error });
  return `[${[...refused, ...errors].join(',')}]`;
}
