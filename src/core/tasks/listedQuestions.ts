import { QuestionWithdrawnError, UpstreamFailedError } from '../errors.js';
import { CAPABILITY_FOR } from '../host/hostSession.js';
import type { Logger } from '../logger.js';
import type { Params } from '../protocol/jsonRpc.js';
import { Cancellation, type CancelSignal } from '../rpc/cancellation.js';
import type { Outcome } from '../rpc/outcome.js';
import { MAX_INPUT_REQUESTS } from './fulfilInput.js';

/**
 * The questions one task of a 2026-07-28 server needs answered by the host. Such a server lists
 * what its task needs (`inputRequests`, under keys of its own) and takes the answers with
 * `tasks/update`. The gateway asks each listed question itself, through the pipeline, as a
 * request to the host (so policy and the audit trail see it, labelled with its server); how the
 * host is asked is its era's business (a request of its own for a 2025-11-25 host, a question in
 * its `tasks/get` for a modern one, see taskRelay.ts). The answers go back under the server's
 * keys.
 *
 * A server's listing is complete (the extension has `inputRequests` hold every request still
 * outstanding, and a task that is not `input_required` has none), so a question the server stops
 * listing is one it no longer wants: it is withdrawn (its way to the host is cancelled, the audit
 * trail records it cancelled), and an answer that comes for it later is dropped. Two things are
 * not withdrawals: a question answered upstream that a lagging listing still shows (not asked
 * again), and a listing older than the question (see Listing).
 *
 * Bounded: at most MAX_INPUT_REQUESTS questions per listing, MAX_ANSWERED_PER_TASK keys
 * remembered as answered.
 */

/** Server keys remembered as answered per task, so a lagging listing does not ask twice. */
const MAX_ANSWERED_PER_TASK = 256;

/**
 * Which state of a task a listing was: its number in arrival order, and the server's time of it.
 * A question first shown by a listing numbered above `listing`, or by a state the server updated
 * after this one, is newer than the listing, which cannot withdraw it (two polls crossing, or a
 * status pushed on one stream arriving after a poll answered on another had overtaken it).
 */
export interface Listing {
  readonly listing: number;
  /** Its `lastUpdatedAt` in ms since the epoch; NaN when it had none (NaN compares false). */
  readonly updated: number;
}

/** One question at the host, or answered there and not sent on yet. */
export interface ListedQuestion {
  /** The server's key. */
  readonly key: string;
  readonly signal: Cancellation;
  /** The host's answer, as it came back through the pipeline. */
  readonly outcome: Promise<Outcome>;
  /** The listing that first showed it. */
  readonly since: Listing;
  /** Set when its server stopped listing it: its end is not a refusal, its answer goes nowhere. */
  withdrawn: boolean;
  /** Set once the host answered it (or it was refused on its way). */
  settled: boolean;
}

/** Asks the host one question (`params` as the server listed them), withdrawn by `signal`. */
export type AskQuestion = (method: string, params: Params, signal: Cancellation) => Promise<Outcome>;

export class ListedQuestions {
  /** Open questions (at the host, or answered and not sent on), by the server's key. */
  private readonly open = new Map<string, ListedQuestion>();
  /** Server keys answered (or being answered) upstream. */
  private readonly answered = new Set<string>();

  constructor(
    private readonly task: {
      readonly server: string;
      readonly taskId: string;
      readonly logger: Logger;
    },
  ) {}

  /**
   * The entries of a listing, checked: more than MAX_INPUT_REQUESTS, or a question of a kind no
   * host can be asked, fails the task's server (nothing is asked then).
   */
  static entries(server: string, requests: unknown): [string, Params][] {
    const entries =
      typeof requests === 'object' && requests !== null && !Array.isArray(requests)
        ? Object.entries(requests as Params)
        : [];
    if (entries.length > MAX_INPUT_REQUESTS)
      throw new UpstreamFailedError(server, `asked for ${entries.length} inputs at once for one task`);
    for (const [, request] of entries) {
      const method = (request as Params | null)?.method;
      if (typeof method !== 'string' || !CAPABILITY_FOR.has(method))
        throw new UpstreamFailedError(
          server,
          `asked for task input of an unknown kind (${String(method).slice(0, 100)})`,
        );
    }
    return entries as [string, Params][];
  }

  /**
   * Withdraws the open questions that `listed` (the server's complete listing) leaves out,
   * except those newer than the listing `asOf`; returns their keys.
   */
  withdrawUnlisted(listed: ReadonlySet<string>, asOf: Listing): string[] {
    const gone: string[] = [];
    for (const [key, question] of this.open) {
      if (listed.has(key) || question.since.listing > asOf.listing || asOf.updated < question.since.updated)
        continue;
      gone.push(key);
      this.withdraw(question, 'its task no longer lists it');
      this.task.logger.info(
        `withdrew question ${key} of task ${this.task.taskId} of ${this.task.server} from the host: the server no longer lists it`,
      );
    }
    return gone;
  }

  /** The listed entries not asked yet (neither open nor answered upstream), in listing order. */
  fresh(entries: readonly [string, Params][]): [string, Params][] {
    return entries.filter(([key]) => !this.open.has(key) && !this.answered.has(key));
  }

  /**
   * Asks the host the server's question `key` with `ask`; `parent`, when given, withdraws it too
   * (the host request it is asked within ended).
   */
  ask(key: string, request: Params, since: Listing, ask: AskQuestion, parent?: CancelSignal): ListedQuestion {
    const { cancellation: signal, dispose } =
      parent === undefined
        ? { cancellation: new Cancellation(), dispose: () => {} }
        : Cancellation.linkedTo(parent);
    const outcome = ask(request.method as string, (request.params ?? {}) as Params, signal);
    const question: ListedQuestion = { key, signal, outcome, since, withdrawn: false, settled: false };
    this.open.set(key, question);
    void outcome
      .then(
        () => (question.settled = true),
        () => (question.settled = true),
      )
      .finally(dispose);
    return question;
  }

  /** The open question under the server's `key`; undefined when none is. */
  question(key: string): ListedQuestion | undefined {
    return this.open.get(key);
  }

  /** The open questions, in the order they were asked. */
  questions(): IterableIterator<ListedQuestion> {
    return this.open.values();
  }

  /**
   * The answers of `questions` (all open ones when absent) that are in and not sent on yet,
   * under the server's keys: each is noted as answered upstream. A question refused on its way
   * is dropped (its refusal is the caller's to handle).
   */
  async take(questions?: readonly ListedQuestion[]): Promise<Params> {
    const responses: Params = {};
    for (const question of questions ?? [...this.open.values()]) {
      const outcome = await question.outcome.catch(() => undefined);
      // Withdrawn on the way back: the server no longer wants it.
      if (question.withdrawn || this.open.get(question.key) !== question) {
        this.task.logger.info(
          `dropped the host's answer under ${question.key}: its server withdrew that question meanwhile`,
        );
        continue;
      }
      this.open.delete(question.key);
      if (outcome === undefined) continue;
      if (this.answered.size >= MAX_ANSWERED_PER_TASK)
        this.answered.delete(this.answered.values().next().value!);
      this.answered.add(question.key);
      responses[question.key] = outcome.result;
    }
    return responses;
  }

  /** Withdraws every open question, saying `why`. */
  withdrawAll(why: string | Error): void {
    for (const question of [...this.open.values()]) this.withdraw(question, why);
  }

  private withdraw(question: ListedQuestion, why: string | Error): void {
    question.withdrawn = true;
    this.open.delete(question.key);
    question.signal.cancel(typeof why === 'string' ? new QuestionWithdrawnError(this.task.server, why) : why);
  }
}
