import { idKey, type RequestId } from '../protocol/jsonRpc.js';

/** The answers one batch is owed, and those it has. */
interface Batch {
  waiting: number;
  readonly answers: string[];
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

  /**
   * A batch with requests under `ids` and the error answers its invalid elements already got.
   * Returns the array's text when nothing is left to wait for, undefined otherwise.
   */
  open(ids: readonly RequestId[], errors: readonly string[]): string | undefined {
    const batch: Batch = { waiting: 0, answers: [...errors] };
    for (const id of ids) {
      const key = idKey(id);
      // A host reusing an id within one batch gets one answer under it, as the other would be lost.
      if (this.owners.has(key)) continue;
      this.owners.set(key, batch);
      batch.waiting++;
    }
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
    if (batch.waiting > 0 || batch.answers.length === 0) return undefined;
    return `[${batch.answers.join(',')}]`;
  }
}
