import { randomBytes } from 'node:crypto';
import { NotServingError, TurnQueueFullError } from '../../core/errors.js';
import type { Logger } from '../../core/logger.js';
import type { Next, RoutedMessage, Stage } from '../../core/pipeline/types.js';
import { derive } from '../../core/pipeline/routedMessage.js';
import { describePrincipal, principalKey } from '../../core/principal.js';
import { createdTask, TERMINAL_STATUSES } from '../../core/protocol/taskMessages.js';
import type { CancelListener, CancelSignal } from '../../core/rpc/cancellation.js';
import type { Outcome } from '../../core/rpc/outcome.js';
import { Deferred } from '../../lib/deferred.js';
import { sha256Hex } from '../../lib/hash.js';
import type { LeaseStorage } from './storeLeases.js';
import { PollNotSentError, TASK_KINDS, TaskTurn } from './taskTurn.js';

export interface ReplicaLeaseOptions {
  readonly leases: LeaseStorage;
  /**
   * For a server by name, how many of one principal's requests may wait on this replica for
   * their turn; undefined when its requests take no turns (not a per-principal stdio server, or
   * `acrossReplicas: parallel`). Asked per request, so an edit of the config applies at once.
   */
  readonly waitersFor: (server: string) => number | undefined;
  /** A lease whose holder stops renewing it is free after this long. */
  readonly ttlMs: number;
  /** The longest a waiter goes without asking the store again (should a release be missed). */
  readonly pollMs: number;
  readonly logger: Logger;
  readonly now?: () => number;
  /**
   * The audit stage, when there is a trail: the gateway's own polls of a task holding a turn
   * start below it (the host's request they follow was recorded already), so they are passed
   * through it here to get records of their own, marked as the gateway's.
   */
  readonly audited?: Stage;
}

/** A request waiting on this replica for the turn another request of this replica has. */
class TurnWaiter extends Deferred<void> implements CancelListener {
  constructor(
    private readonly lane: Lane,
    private readonly signal: CancelSignal,
  ) {
    super();
    signal.listen(this);
  }

  onCancelled(reason: Error): void {
    const at = this.lane.waiting.indexOf(this);
    if (at >= 0) this.lane.waiting.splice(at, 1);
    this.reject(reason);
  }

  /** Its turn came: it stops listening for a cancel (its own wait for the store listens anew). */
  go(): void {
    this.signal.unlisten(this);
    this.resolve();
  }
}

/**
 * One principal's own process of one server, as this replica sees it: whether one of its
 * requests has the turn (it holds the lease, or is getting it), and those waiting behind it.
 */
interface Lane {
  readonly waiting: TurnWaiter[];
}

/** A turn this replica holds: the lease in the store, its renewal, and the line behind it here. */
interface HeldTurn {
  readonly key: string;
  readonly token: string;
  readonly lane: Lane;
  readonly renewal: NodeJS.Timeout;
}

/**
 * A pause before the next attempt at a lease: a release of that lease, the time given, or the
 * request's cancel ends it, whichever comes first.
 */
class Pause extends Deferred<void> implements CancelListener {
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly wakers: Map<string, Set<Pause>>,
    private readonly key: string,
    private readonly signal: CancelSignal,
    ms: number,
  ) {
    super();
    let set = wakers.get(key);
    if (set === undefined) wakers.set(key, (set = new Set()));
    set.add(this);
    this.timer = setTimeout(() => this.end(), ms);
    signal.listen(this);
  }

  onCancelled(reason: Error): void {
    this.leave();
    this.reject(reason);
  }

  /** Time to try again. */
  end(): void {
    this.leave();
    this.resolve();
  }

  private leave(): void {
    clearTimeout(this.timer);
    this.signal.unlisten(this);
    const set = this.wakers.get(this.key);
    set?.delete(this);
    if (set?.size === 0) this.wakers.delete(this.key);
  }
}

/**
 * One request at a time to each principal's own process of a server, over every replica that
 * shares the store. Two replicas each run a copy of a user's process; when both copies work on
 * the same files (the user's folder on storage every replica mounts), two writes at once would
 * each read the file, change it and write it back, and one would be lost.
 *
 * The turn is a lease in the store, per call: a request takes it, holds it while it runs
 * (renewed a few times per time to live), and gives it up when it ends. Per call rather than
 * per replica because a server such as server-memory is not safe with two requests at once even
 * in one process: it reads and writes its file around awaits. Requests of one replica queue
 * here first (a bounded line per process), so only one of them at a time asks the store.
 *
 * A request that cannot get the lease waits until the holder releases it (announced by the
 * store; a slow poll stands in for a lost announcement) or until its own timeout, which then
 * says that another replica is using the process. A lease whose holder died runs out after its
 * time to live. A store that fails refuses the request: the turn cannot be known, and running
 * without it is the lost write this prevents.
 *
 * A call the server answers with a task does not end its work with its answer: the task runs on
 * in the background, so the turn passes to the task and is held until it ends (see TaskTurn).
 * Requests about tasks take no turn.
 */
export function createReplicaLeaseStage(options: ReplicaLeaseOptions): Stage {
  const turns = new ReplicaTurns(options);
  return async function replicaLease(call: RoutedMessage, next: Next): Promise<Outcome> {
    if (call.direction !== 'upstream' || call.principal === undefined) return next(call);
    const maxWaiting = options.waitersFor(call.server);
    if (maxWaiting === undefined) return next(call);
    if (TASK_KINDS.has(call.kind)) return turns.aboutTask(call, next);
    return turns.run(call, next, maxWaiting);
  };
}

/** The turns of this replica's requests at principals' own processes, as the stage takes them. */
class ReplicaTurns {
  readonly #lanes = new Map<string, Lane>();
  readonly #wakers = new Map<string, Set<Pause>>();
  /** Per lease key, the task that holds its turn on this replica (one at a time, as any turn). */
  readonly #tasks = new Map<string, { readonly taskId: string; readonly turn: TaskTurn }>();
  readonly #now: () => number;

  constructor(private readonly options: ReplicaLeaseOptions) {
    this.#now = options.now ?? performance.now.bind(performance);
    options.leases
      .onReleased((key) => {
        for (const pause of this.#wakers.get(key) ?? []) pause.end();
      })
      .catch((error: Error) =>
        options.logger.warn(
          `${error.message}; requests waiting for another replica ask the store again every ${options.pollMs} ms instead`,
        ),
      );
  }

  /** Runs `call` (to a principal's own process) in its turn over all replicas. */
  async run(call: RoutedMessage, next: Next, maxWaiting: number): Promise<Outcome> {
    const key = leaseKey(call);
    const arrived = this.#now();
    const { lane, queuedHere } = await this.#inLane(call, key, maxWaiting);
    const token = randomBytes(16).toString('hex');
    let waitedElsewhere: boolean;
    try {
      waitedElsewhere = await this.#acquire(call, key, token);
    } catch (error) {
      // A request that gives up waiting leaves its claim on the next turn to whoever waits next.
      // When the store failed, the release goes too, unannounced: an attempt the store took but
      // answered too late would otherwise leave a lease nobody holds until it runs out.
      this.#release(call, key, token, { quiet: error instanceof NotServingError });
      this.#handOn(key, lane);
      throw error;
    } finally {
      delete call.record.waitingOn;
    }
    if (queuedHere || waitedElsewhere) call.record.leaseWaitMs = Math.ceil(this.#now() - arrived);
    const held: HeldTurn = { key, token, lane, renewal: this.#renewWhileRunning(call, key, token) };
    let followed = false;
    try {
      if (call.signal.cancelled) throw call.signal.reason!;
      const outcome = await next(call);
      followed = this.#passToTask(call, next, held, outcome);
      return outcome;
    } finally {
      if (!followed) this.#end(call, held);
    }
  }

  /**
   * A request about a task, which takes no turn: the task's own work holds it (waiting for it
   * would be waiting for itself). What its answer shows of a task holding the turn is noted.
   */
  async aboutTask(call: RoutedMessage, next: Next): Promise<Outcome> {
    const outcome = await next(call);
    if (this.#tasks.size > 0) {
      const holding = this.#tasks.get(leaseKey(call));
      if (holding !== undefined && holding.taskId === call.params?.taskId)
        holding.turn.saw(call.kind, outcome);
    }
    return outcome;
  }

  /**
   * When `call` was answered with a task that runs on, hands its turn to the task (true);
   * the turn then ends when the task does, or when the gateway gives up on it.
   */
  #passToTask(call: RoutedMessage, next: Next, held: HeldTurn, outcome: Outcome): boolean {
    // A task the gateway runs for the host ended within the call; any other call is done.
    if (call.kind !== 'tools/call' || call.task?.drivenBy !== 'host') return false;
    const created = createdTask(outcome.result);
    const taskId = created?.taskId;
    if (typeof taskId !== 'string' || TERMINAL_STATUSES.has(String(created!.status))) return false;
    const turn = new TaskTurn({
      taskId,
      created: created!,
      askMs: this.options.ttlMs,
      ask: (signal) =>
        this.#poll(
          derive(call, {
            kind: 'tasks/get',
            params: { taskId },
            arguments: { taskId },
            meta: undefined,
            requestId: undefined,
            task: undefined,
            signal,
            onProgress: undefined,
            answerAs: undefined,
            // The call's record is written already; each poll has a record of its own.
            record: { repairs: [], origin: 'gateway' },
          }),
          next,
        ),
      onEnd: (why, gaveUp) => {
        this.#tasks.delete(held.key);
        if (gaveUp)
          this.options.logger.info(
            `${describePrincipal(call.principal!)}'s task ${taskId} at server "${call.server}" no longer holds their turn: ${why}`,
          );
        this.#end(call, held);
      },
    });
    this.#tasks.set(held.key, { taskId, turn });
    return true;
  }

  /**
   * Sends the gateway's own `poll` of a task on, audited under the principal of the call that
   * created the task: a poll whose record cannot be written is not sent (PollNotSentError).
   */
  async #poll(poll: RoutedMessage, next: Next): Promise<Outcome> {
    const { audited } = this.options;
    if (audited === undefined) return next(poll);
    let sent = false;
    try {
      return await audited(poll, (message) => {
        sent = true;
        return next(message);
      });
    } catch (error) {
      if (sent) throw error;
      throw new PollNotSentError(`the poll was not sent: ${(error as Error).message}`, { cause: error });
    }
  }

  /** The turn `held` is over: its renewal stops, the store's lease goes, the next here goes on. */
  #end(call: RoutedMessage, held: HeldTurn): void {
    clearInterval(held.renewal);
    // In order on the store's one connection: the next request's attempt comes after this.
    this.#release(call, held.key, held.token);
    this.#handOn(held.key, held.lane);
  }

  /**
   * The line of this replica's requests for `key`: `call` goes first when there is none, or
   * waits behind those there (at most `maxWaiting`) for its place at the front.
   */
  async #inLane(
    call: RoutedMessage,
    key: string,
    maxWaiting: number,
  ): Promise<{ readonly lane: Lane; readonly queuedHere: boolean }> {
    const lane = this.#lanes.get(key);
    if (lane === undefined) {
      const fresh = { waiting: [] };
      this.#lanes.set(key, fresh);
      return { lane: fresh, queuedHere: false };
    }
    if (lane.waiting.length >= maxWaiting)
      throw new TurnQueueFullError(
        `${describePrincipal(call.principal!)}'s own process of server "${call.server}" runs one request at a time, ` +
          `and ${lane.waiting.length} of their requests already wait for it here (maxQueue); try again later.`,
      );
    const waiter = new TurnWaiter(lane, call.signal);
    lane.waiting.push(waiter);
    await waiter.promise;
    return { lane, queuedHere: true };
  }

  /** Gives the lane's turn to the next request waiting on this replica, or forgets the lane. */
  #handOn(key: string, lane: Lane): void {
    const next = lane.waiting.shift();
    if (next === undefined) this.#lanes.delete(key);
    else next.go();
  }

  /**
   * Takes the store's lease for `call`, waiting for it as long as the call may; true when it
   * had to wait for another replica.
   */
  async #acquire(call: RoutedMessage, key: string, token: string): Promise<boolean> {
    const { leases, ttlMs, pollMs } = this.options;
    const claimMs = 3 * pollMs;
    for (let waited = false; ; waited = true) {
      let attempt;
      try {
        attempt = await leases.acquire(key, token, ttlMs, claimMs);
      } catch (error) {
        throw storeFailed(call, error);
      }
      if (attempt.held) return waited;
      call.record.waitingOn = `another replica is using ${describePrincipal(call.principal!)}'s own process of server "${call.server}", which runs one request at a time`;
      await new Pause(this.#wakers, key, call.signal, Math.min(Math.max(attempt.retryInMs, 1), pollMs))
        .promise;
    }
  }

  /** Renews the lease a few times per time to live while `call` runs; a lease lost is warned once. */
  #renewWhileRunning(call: RoutedMessage, key: string, token: string): NodeJS.Timeout {
    const { leases, ttlMs } = this.options;
    // Said once per request: a store that stays down would otherwise repeat it at every renewal.
    let warned = false;
    const warnLost = (why: string): void => {
      if (!warned) this.#lost(call, why);
      warned = true;
    };
    const renewal = setInterval(() => {
      leases.renew(key, token, ttlMs).then(
        (held) => {
          if (held) return;
          // Another replica may hold it now: renewing it again would not make it ours.
          clearInterval(renewal);
          warnLost('it ran out before it could be renewed');
        },
        (error: Error) => warnLost(error.message),
      );
    }, ttlMs / 3);
    renewal.unref();
    return renewal;
  }

  /** Gives the lease (or claim) up; `quiet` when the store is known to have just failed. */
  #release(call: RoutedMessage, key: string, token: string, how: { readonly quiet?: boolean } = {}): void {
    this.options.leases.release(key, token).catch((error: Error) => {
      if (how.quiet !== true)
        this.options.logger.warn(
          `${error.message}; the turn at server "${call.server}" is free when its lease runs out`,
        );
    });
  }

  #lost(call: RoutedMessage, why: string): void {
    this.options.logger.warn(
      `the turn at ${describePrincipal(call.principal!)}'s own process of server "${call.server}" was lost while a request ran (${why}): another replica may start one at the same time`,
    );
  }
}

/** The key of the lease for `call`'s principal's own process of its server. */
function leaseKey(call: RoutedMessage): string {
  return sha256Hex(`${principalKey(call.principal!)}\u0000${call.server}`);
}

/** The refusal of a request whose turn the store could not give. */
function storeFailed(call: RoutedMessage, error: unknown): NotServingError {
  return new NotServingError(
    `Server "${call.server}" runs one request at a time for each user over all replicas, and ` +
      `${describePrincipal(call.principal!)}'s turn could not be taken: ${(error as Error).message}. ` +
      'The call was not run; try again when the store is back.',
  );
}
