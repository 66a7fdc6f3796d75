import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { canonicalJson } from '../../lib/canonicalJson.js';
import { sha256Hex } from '../../lib/hash.js';
import { ContinuedElsewhereError, MethodNotFoundError, ProtocolError } from '../errors.js';
import type { RoutedMessage } from '../pipeline/types.js';
import { DeadlineQueue, type DeadlineEntry } from '../rpc/deadlines.js';
import { RpcErrorCode, type Params } from '../protocol/jsonRpc.js';
import { Outcome } from '../rpc/outcome.js';
import type { IncomingRequest, OutgoingOptions } from '../rpc/peer.js';
import {
  CAPABILITY_FOR,
  elicitationModeRefused,
  FORWARDED_CLIENT_CAPABILITIES,
  type AskOrigin,
  type InputBridge,
} from '../host/hostSession.js';
import { envelopeOf } from '../host/answerShape.js';

/**
 * Server-to-client questions (sampling, elicitation, roots) for a host of the stateless
 * revision, which takes no requests: it is asked through Multi Round-Trip Requests instead. A
 * question asked while one of its calls runs (by the gateway's own confirmation, or by a legacy
 * upstream that sends the request the old way) ends that call's answer early with an
 * `InputRequiredResult`; the call itself keeps running in the gateway, waiting. The host's retry
 * carries the answers and the `requestState` minted here; the waiting questions get the answers,
 * and the retry gets the call's result (or the next questions).
 *
 * The state is sealed with an HMAC under a key made for this process, and names the call it
 * belongs to (a single-use token), the method, target and a digest of the arguments, the host
 * and an expiry: a forged state, one presented for another call, or one used twice is refused.
 */

export interface ModernInputBridgeOptions {
  /** How long a call waits for the host's retry after asking; then its questions fail. */
  readonly waitMs: number;
  /** At most this many questions wait for a host's answers at once, over all calls. */
  readonly maxPending: number;
  readonly warn: (message: string) => void;
  /**
   * How many requests with one of these methods the gateway has in flight to `server`, for this
   * host and any other: a legacy server's question names no call, so it can be given to a call
   * only when that call is the one such request running there.
   */
  readonly inFlightOn: (server: string, methods: ReadonlySet<string>) => number;
  /**
   * Where continuations are recorded for replicas that share a store; absent: a state is good
   * only on the connection that minted it.
   */
  readonly continuations?: SharedContinuations;
}

/** The questions a sealed state answers, as recorded for the replica that takes its retry. */
export interface ContinuationRecord {
  /** Each question's key in `inputRequests`, its method, and whether the gateway asked it itself. */
  readonly questions: readonly { readonly key: string; readonly method: string; readonly own: boolean }[];
}

/**
 * Continuations shared by replicas behind one balancer. A state is sealed with a key they all
 * hold, and its one-time use is decided by the store: of two replicas shown the same state, one
 * takes it. A retry that lands on a replica without its call can run the call afresh when the
 * only questions were the gateway's own (a confirmation): nothing had gone upstream yet, and
 * the answers it brings are the ones the question needs.
 */
export interface SharedContinuations {
  /** The key states are sealed with, the same on every replica. */
  readonly sealKey: Buffer;
  /** This replica's name, in the states of calls only it can continue (see `holderOf`). */
  readonly replica: string;
  /** Records the continuation of `token` until `ttlMs` passes; rejects when the store fails. */
  record(token: string, entry: ContinuationRecord, ttlMs: number): Promise<void>;
  /**
   * Takes the record of `token` (once, over all replicas), noting that this replica took it;
   * when it is gone, who took it, if a replica did. Rejects when the store cannot say.
   */
  claim(token: string): Promise<ContinuationClaim>;
}

/** What claiming a continuation found: its record (now ours), the replica that took it, or nothing. */
export type ContinuationClaim =
  { readonly record: ContinuationRecord } | { readonly takenBy: string } | undefined;

/** Requests that may be answered with an InputRequiredResult (the revision's list). */
const MRTR_METHODS: ReadonlySet<string> = new Set(['tools/call', 'prompts/get', 'resources/read']);
/** Marks a `requestState` the gateway minted, so one from a modern upstream passes untouched. */
export const STATE_PREFIX = 'mcpw1.';

interface Question {
  readonly key: string;
  readonly method: string;
  readonly params: Params | undefined;
  /** Asked by the gateway for the call itself (a confirmation), before it goes upstream. */
  readonly own: boolean;
  resolve(outcome: Outcome): void;
  reject(error: Error): void;
}

type Settled = { readonly outcome: Outcome } | { readonly error: unknown };

/** What a sealed state vouches for. */
interface StatePayload {
  /** The single-use token of the continuation. */
  readonly t: string;
  readonly m: string;
  readonly g: string;
  readonly s: string;
  /** Digest of the arguments. */
  readonly a: string;
  /** The host's name, as its envelope gave it. */
  readonly h: string;
  /** Expiry, in ms since the epoch. */
  readonly x: number;
  /**
   * The replica holding the call, when only it can continue it: a server asked during the call,
   * and the connection that question came on lives there.
   */
  readonly r?: string;
}

/** How a routed call is answered and run: what `route` was given. */
interface Continue {
  readonly respond: (outcome: Outcome) => void;
  readonly fail: (error: unknown) => void;
  readonly run: (message: RoutedMessage) => Promise<Outcome>;
}

/** A host request attached to a bridged call: the one its next answer goes to. */
interface Attached {
  readonly request: IncomingRequest;
  readonly respond: (outcome: Outcome) => void;
  readonly fail: (error: unknown) => void;
}

/** One call of a modern host, while questions may be asked in it. */
class BridgedCall implements DeadlineEntry {
  deadline = 0;
  queued = false;
  prevEntry: DeadlineEntry | undefined;
  nextEntry: DeadlineEntry | undefined;
  attached: Attached | undefined;
  /** Asked, not yet sent to the host. */
  pending: Question[] = [];
  /** Sent in an InputRequiredResult, waiting for the retry. */
  sent: Question[] = [];
  settled: Settled | undefined;
  /** The token of the state handed out for the next retry. */
  token: string | undefined;
  /**
   * Answers a retry brought for a call this replica runs afresh (see SharedContinuations), by
   * method: the gateway's own question of that method is answered with it instead of asked.
   */
  presetAnswers: Map<string, Record<string, unknown>> | undefined;
  private flushing = false;

  constructor(
    private readonly bridge: ModernInputBridge,
    readonly origin: IncomingRequest,
    readonly message: RoutedMessage,
    readonly binding: Omit<StatePayload, 't' | 'x' | 'r'>,
  ) {}

  attach(attached: Attached): void {
    this.attached = attached;
    // The host cancelling its retry cancels the call it continues.
    if (attached.request !== this.origin)
      attached.request.onCancel((reason) => {
        if (this.attached?.request === attached.request) this.attached = undefined;
        this.origin.cancel(reason);
      });
    if (this.settled !== undefined) this.deliver();
    else if (this.pending.length > 0) this.scheduleFlush();
  }

  /** Whether the gateway's own question about this call (a confirmation) is still open. */
  awaitsOwnQuestion(): boolean {
    return this.pending.some((q) => q.own) || this.sent.some((q) => q.own);
  }

  ask(question: Question): void {
    this.pending.push(question);
    if (this.attached !== undefined) this.scheduleFlush();
  }

  finish(settled: Settled): void {
    this.settled = settled;
    // Questions still open no longer matter: whoever asked them has finished.
    for (const q of [...this.pending, ...this.sent])
      q.reject(new Error('the call finished before the host answered'));
    this.pending = [];
    this.sent = [];
    if (this.attached !== undefined) this.deliver();
    // No retry can come for it (none was invited, or its invitation expired): nothing to keep.
    else if (this.token === undefined) this.bridge.forget(this);
  }

  expired(): void {
    this.bridge.expire(this);
  }

  private deliver(): void {
    const attached = this.attached!;
    const settled = this.settled!;
    this.attached = undefined;
    this.bridge.forget(this);
    if ('outcome' in settled) attached.respond(settled.outcome);
    else attached.fail(settled.error);
  }

  /** Questions asked in the same turn go to the host together. */
  private scheduleFlush(): void {
    if (this.flushing) return;
    this.flushing = true;
    queueMicrotask(() => {
      this.flushing = false;
      const attached = this.attached;
      if (attached === undefined || this.pending.length === 0 || this.settled !== undefined) return;
      this.attached = undefined;
      const inputRequests: Params = {};
      for (const q of this.pending) inputRequests[q.key] = { method: q.method, params: q.params ?? {} };
      const asked = this.pending;
      this.sent.push(...asked);
      this.pending = [];
      const requestState = this.bridge.seal(this);
      const answer = (): void =>
        attached.respond(Outcome.of({ resultType: 'input_required', inputRequests, requestState }));
      const recorded = this.bridge.share(this);
      if (recorded === undefined) return answer();
      // The host may retry on any replica once it has the state: it is recorded first. A store
      // that fails means no replica could take the retry: the questions fail (a confirmation
      // is then refused), and the host is told that instead.
      recorded.then(answer, (error: unknown) => {
        this.bridge.unseal(this);
        this.attached = attached;
        for (const q of asked) q.reject(error as Error);
      });
    });
  }
}

/** Seals the states of one connection's calls, and opens them again when a retry brings one. */
class StateSeal {
  /**
   * A key of this connection's only, unless the replicas share one: states do not outlive it.
   * Made on first use, since most connections never seal a state (and a stateless request is a
   * connection of its own).
   */
  private key: Buffer | undefined;

  constructor(private readonly sharedKey: Buffer | undefined) {}

  seal(payload: StatePayload): string {
    const body = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
    return `${STATE_PREFIX}${body}.${this.mac(body)}`;
  }

  open(state: string): StatePayload {
    const body = state.slice(STATE_PREFIX.length);
    const dot = body.lastIndexOf('.');
    if (dot <= 0) throw refused('it is malformed');
    const data = body.slice(0, dot);
    const given = Buffer.from(body.slice(dot + 1), 'base64url');
    const expected = Buffer.from(this.mac(data), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected))
      throw refused('it failed verification (it was not issued by this mcp-warden process, or was changed)');
    return JSON.parse(Buffer.from(data, 'base64url').toString('utf8')) as StatePayload;
  }

  private mac(data: string): string {
    this.key ??= this.sharedKey ?? randomBytes(32);
    return createHmac('sha256', this.key).update(data).digest('base64url');
  }
}

export class ModernInputBridge implements InputBridge {
  private readonly states: StateSeal;
  private readonly byOrigin = new Map<IncomingRequest, BridgedCall>();
  private readonly byToken = new Map<string, BridgedCall>();
  private readonly deadlines = new DeadlineQueue();
  private pending = 0;
  /** Why questions are refused: the connection closed, and no retry will come. */
  private closedWith: Error | undefined;
  private nextQuestion = 1;
  /** The capabilities `applies` saw last, and whether they declared anything the host can be asked. */
  private lastCapabilities: object | undefined;
  private lastAsks = false;

  constructor(private readonly options: ModernInputBridgeOptions) {
    this.states = new StateSeal(options.continuations?.sealKey);
  }

  /**
   * Whether a modern host's request is routed through the bridge: one that may be answered with
   * an InputRequiredResult, from a host that declared something it can be asked (a host that
   * declared none of sampling, elicitation and roots can be asked nothing, so its call goes the
   * direct way).
   */
  applies(request: IncomingRequest): boolean {
    if (!MRTR_METHODS.has(request.method)) return false;
    const capabilities = envelopeOf(request)?.capabilities;
    if (capabilities === undefined) return false;
    // A retry that carries our state continues its call (or is refused), whatever it declares.
    const state = request.params?.requestState;
    if (typeof state === 'string' && state.startsWith(STATE_PREFIX)) return true;
    // A host's requests share one envelope while it is unchanged: its answer is kept for it.
    if (capabilities !== this.lastCapabilities) {
      this.lastCapabilities = capabilities;
      this.lastAsks = FORWARDED_CLIENT_CAPABILITIES.some((name) => capabilities[name] !== undefined);
    }
    return this.lastAsks;
  }

  /**
   * Routes a modern host's call: a retry carrying a state minted here continues its call; any
   * other request starts one, run through `run` (the pipeline).
   */
  route(
    request: IncomingRequest,
    message: RoutedMessage,
    run: (message: RoutedMessage) => Promise<Outcome>,
    respond: (outcome: Outcome) => void,
    fail: (error: unknown) => void,
  ): void {
    const state = request.params?.requestState;
    if (typeof state === 'string' && state.startsWith(STATE_PREFIX)) {
      try {
        const resumed = this.resume(request, message, state, { respond, fail, run });
        if (resumed !== undefined) resumed.catch(fail);
      } catch (error) {
        fail(error);
      }
      return;
    }
    this.start(new BridgedCall(this, request, message, this.bindingOf(request, message)), {
      respond,
      fail,
      run,
    });
  }

  private start(call: BridgedCall, how: Continue): void {
    this.byOrigin.set(call.origin, call);
    call.attach({ request: call.origin, respond: how.respond, fail: how.fail });
    how.run(call.message).then(
      (outcome) => call.finish({ outcome }),
      (error: unknown) => call.finish({ error }),
    );
  }

  ask(
    method: string,
    params: Params | undefined,
    options: OutgoingOptions,
    origin?: AskOrigin,
  ): Promise<Outcome> {
    if (this.closedWith !== undefined) return Promise.reject(this.closedWith);
    const call = this.callFor(origin);
    if (call === 'several')
      return Promise.reject(
        new MethodNotFoundError(
          `${method} cannot reach the host: server "${origin!.server!}" has more than one call running, and its request does not say which one it belongs to (the host speaks protocol revision 2026-07-28, which is asked within a call)`,
        ),
      );
    if (call === undefined)
      return Promise.reject(
        new MethodNotFoundError(
          `${method} cannot reach the host: it speaks protocol revision 2026-07-28, which takes questions only during a tool call, prompt or resource read${origin?.server === undefined ? '' : ` of server "${origin.server}"`}, and none is running`,
        ),
      );
    const capability = CAPABILITY_FOR.get(method)!;
    const declared = envelopeOf(call.origin)?.capabilities[capability];
    if (declared === undefined)
      return Promise.reject(
        new MethodNotFoundError(
          `the host connected to mcp-warden did not declare the ${capability} capability`,
        ),
      );
    const refused = capability === 'elicitation' ? elicitationModeRefused(params, declared) : undefined;
    if (refused !== undefined) return Promise.reject(new MethodNotFoundError(refused));
    if (this.pending >= this.options.maxPending)
      return Promise.reject(
        new MethodNotFoundError(
          `mcp-warden already waits for the host's answers to ${this.options.maxPending} questions; this ${method} is refused`,
        ),
      );
    const { signal } = options;
    if (signal?.cancelled) return Promise.reject(signal.reason!);
    const preset = origin?.hostRequest === undefined ? undefined : call.presetAnswers?.get(method);
    if (preset !== undefined) {
      call.presetAnswers!.delete(method);
      return Promise.resolve(Outcome.of(preset));
    }
    this.pending++;
    return new Promise<Outcome>((resolve, reject) => {
      let done = false;
      const finish = (): boolean => {
        if (done) return false;
        done = true;
        this.pending--;
        stopListening();
        return true;
      };
      const question: Question = {
        key: `q${this.nextQuestion++}`,
        method,
        params,
        own: origin?.hostRequest !== undefined,
        resolve: (outcome) => finish() && resolve(outcome),
        reject: (error) => finish() && reject(error),
      };
      // The asker gave up (the upstream cancelled, the confirmation timed out): drop the question.
      const stopListening =
        signal?.onCancel((reason) => {
          call.pending = call.pending.filter((q) => q !== question);
          this.giveUp(call, question, reason);
        }) ?? (() => {});
      call.ask(question);
    });
  }

  /**
   * Whether `state` continues a call of this bridge that still waits for its retry: sealed here,
   * not used yet, not expired. Lets a transport that serves each request on its own connection
   * (stateless HTTP) find the connection a retry belongs to.
   */
  holds(state: unknown): boolean {
    if (typeof state !== 'string' || !state.startsWith(STATE_PREFIX)) return false;
    try {
      const payload = this.states.open(state);
      return payload.x >= Date.now() && this.byToken.has(payload.t);
    } catch {
      return false;
    }
  }

  /** How long the last of the calls waiting for a retry still waits, or undefined if none does. */
  retryWindowMs(): number | undefined {
    let longest: number | undefined;
    const now = performance.now();
    for (const call of this.byToken.values()) longest = Math.max(longest ?? 0, call.deadline - now);
    return longest;
  }

  /** Seals the state for `call`'s next retry, and waits for it (bounded). */
  seal(call: BridgedCall): string {
    const token = randomBytes(16).toString('base64url');
    call.token = token;
    this.byToken.set(token, call);
    const expires = Date.now() + this.options.waitMs;
    this.deadlines.schedule(call, performance.now() + this.options.waitMs);
    const replica = this.options.continuations?.replica;
    const onlyHere = replica !== undefined && call.sent.some((q) => !q.own);
    return this.states.seal({ ...call.binding, t: token, x: expires, ...(onlyHere && { r: replica }) });
  }

  /**
   * Records `call`'s continuation for the other replicas, when they share a store: resolves
   * once it is recorded. Undefined without a store (nothing to wait for).
   */
  share(call: BridgedCall): Promise<void> | undefined {
    const shared = this.options.continuations;
    if (shared === undefined || call.token === undefined) return undefined;
    const questions = call.sent.map((q) => ({ key: q.key, method: q.method, own: q.own }));
    return shared.record(call.token, { questions }, this.options.waitMs);
  }

  /** Withdraws the state just sealed for `call` (it could not be recorded): no retry continues it. */
  unseal(call: BridgedCall): void {
    if (call.token !== undefined) this.byToken.delete(call.token);
    call.token = undefined;
    this.deadlines.remove(call);
  }

  /**
   * The connection is closing, so no retry will come here: every question still waiting fails
   * with `reason` now (the calls run on without answers and end), and so does any asked later.
   * Unlike an expired wait, a shared continuation is left in the store: a retry that reaches
   * another replica may still run afresh a call that only waited for the gateway's own question.
   */
  close(reason: Error): void {
    this.closedWith = reason;
    for (const call of new Set([...this.byOrigin.values(), ...this.byToken.values()])) {
      this.unseal(call);
      const questions = [...call.pending, ...call.sent];
      call.pending = [];
      call.sent = [];
      for (const q of questions) q.reject(reason);
      if (call.settled !== undefined) this.forget(call);
    }
  }

  /** The host did not retry in time: the questions fail, and the call runs on without answers. */
  expire(call: BridgedCall): void {
    const token = call.token;
    if (call.token !== undefined) this.byToken.delete(call.token);
    call.token = undefined;
    const questions = call.sent;
    call.sent = [];
    if (questions.length > 0)
      this.options.warn(
        `the host did not retry ${call.message.kind} ${call.message.exposedName} within ${this.options.waitMs} ms to answer ${questions.map((q) => q.method).join(', ')}`,
      );
    const reason = new Error(`the host did not answer within ${this.options.waitMs} ms`);
    for (const q of questions) this.giveUp(call, q, reason, token);
    if (call.settled !== undefined) this.forget(call);
  }

  /**
   * Fails `question` with `reason`, except when the gateway asked it itself in a call whose
   * state the replicas share: then the store settles it first. Taking the record there means no
   * retry can run the call anywhere any more, and `reason` stands; finding it taken by another
   * replica means that replica got the host's answer and ran the call, and the question fails
   * saying so (so this replica does not record a confirmation that went unanswered).
   */
  private giveUp(call: BridgedCall, question: Question, reason: Error, token = call.token): void {
    const shared = this.options.continuations;
    if (!question.own || shared === undefined || token === undefined) return question.reject(reason);
    shared.claim(token).then(
      (claim) => {
        if (claim === undefined || 'record' in claim) return question.reject(reason);
        if (call.token === token) this.unseal(call);
        question.reject(new ContinuedElsewhereError(claim.takenBy));
      },
      () => question.reject(reason),
    );
  }

  forget(call: BridgedCall): void {
    this.byOrigin.delete(call.origin);
    if (call.token !== undefined) this.byToken.delete(call.token);
    this.deadlines.remove(call);
  }

  /** Continues the call `state` belongs to; a promise when a shared store must be asked first. */
  private resume(
    request: IncomingRequest,
    message: RoutedMessage,
    state: string,
    how: Continue,
  ): Promise<void> | undefined {
    const payload = this.states.open(state);
    const binding = this.bindingOf(request, message);
    for (const field of ['m', 'g', 's', 'a', 'h'] as const)
      if (payload[field] !== binding[field])
        throw refused('it was issued for another request (method, target, arguments or host differ)');
    if (payload.x < Date.now()) throw refused('it has expired');
    const shared = this.options.continuations;
    if (shared === undefined) {
      const call = this.byToken.get(payload.t);
      if (call === undefined) throw refused('it was already used, or its call has ended');
      this.continueHere(call, payload.t, request, how);
      return undefined;
    }
    return this.resumeShared(shared, payload.t, request, message, binding, how);
  }

  /**
   * With a shared store, the store decides the one-time use: the record is taken before
   * anything continues, and a store that cannot say refuses the state (fail closed). The call
   * continues here when it waits here; else, when its only questions were the gateway's own, it
   * runs afresh with the retry's answers to them.
   */
  private async resumeShared(
    shared: SharedContinuations,
    token: string,
    request: IncomingRequest,
    message: RoutedMessage,
    binding: Omit<StatePayload, 't' | 'x' | 'r'>,
    how: Continue,
  ): Promise<void> {
    let claim: ContinuationClaim;
    try {
      claim = await shared.claim(token);
    } catch (error) {
      throw refused(
        `the shared store could not confirm it was not used before (${(error as Error).message})`,
      );
    }
    if (claim === undefined || !('record' in claim))
      throw refused('it was already used, or its call has ended');
    const { record } = claim;
    const call = this.byToken.get(token);
    if (call !== undefined) return this.continueHere(call, token, request, how);
    if (!record.questions.every((q) => q.own))
      throw refused(
        'its call is running on another replica, where a server asked a question during it; that call can only continue there',
      );
    const fresh = new BridgedCall(this, request, message, binding);
    const responses = request.params?.inputResponses;
    const answers = typeof responses === 'object' && responses !== null ? (responses as Params) : {};
    fresh.presetAnswers = new Map();
    for (const q of record.questions) {
      const answer = answers[q.key];
      if (typeof answer === 'object' && answer !== null && !Array.isArray(answer))
        fresh.presetAnswers.set(q.method, answer as Record<string, unknown>);
    }
    this.start(fresh, how);
  }

  private continueHere(call: BridgedCall, token: string, request: IncomingRequest, how: Continue): void {
    const { respond, fail } = how;
    const payload = { t: token };
    this.byToken.delete(payload.t);
    call.token = undefined;
    this.deadlines.remove(call);
    const responses = request.params?.inputResponses;
    const answers = typeof responses === 'object' && responses !== null ? (responses as Params) : {};
    const sent = call.sent;
    call.sent = [];
    for (const question of sent) {
      const answer = answers[question.key];
      // An answer missing from the retry is asked for again, as the revision advises.
      if (typeof answer === 'object' && answer !== null && !Array.isArray(answer))
        question.resolve(Outcome.of(answer as Record<string, unknown>));
      else call.pending.push(question);
    }
    call.attach({ request, respond, fail });
  }

  /**
   * The call a question belongs to; 'several' when a server's question could belong to more than
   * one call running on that server.
   */
  private callFor(origin: AskOrigin | undefined): BridgedCall | 'several' | undefined {
    const hostRequest = origin?.hostRequest as IncomingRequest | undefined;
    if (hostRequest !== undefined) return this.byOrigin.get(hostRequest);
    const server = origin?.server;
    if (server === undefined) return undefined;
    // A legacy upstream's request names no call: it belongs to the one call running on it.
    let found: BridgedCall | undefined;
    for (const call of this.byOrigin.values()) {
      if (call.message.server !== server || call.settled !== undefined) continue;
      // A call waiting for its own confirmation has not been sent to the server: not the asker.
      if (call.awaitsOwnQuestion()) continue;
      if (found !== undefined) return 'several';
      found = call;
    }
    // Calls this bridge does not hold run there too (one whose envelope declared nothing it can
    // be asked, another host's on a shared server): the question may be theirs, so it is refused
    // rather than put to a call that did not ask it.
    if (found !== undefined && this.options.inFlightOn(server, MRTR_METHODS) > 1) return 'several';
    return found;
  }

  /**
   * Notes on the call `state` continues (when it waits here) that the host's retry reached
   * `replica` first, which sent it on: the call's audit record names every replica that did.
   */
  noteContinuedVia(state: unknown, replica: string): void {
    if (typeof state !== 'string' || !state.startsWith(STATE_PREFIX)) return;
    try {
      const call = this.byToken.get(this.states.open(state).t);
      if (call === undefined) return;
      const via = (call.message.record.continuedVia ??= []);
      if (!via.includes(replica)) via.push(replica);
    } catch {
      // A state that does not open here is refused when the retry is routed.
    }
  }

  private bindingOf(request: IncomingRequest, message: RoutedMessage): Omit<StatePayload, 't' | 'x' | 'r'> {
    return {
      m: request.method,
      g: message.target,
      s: message.server,
      a: sha256Hex(canonicalJson(message.arguments ?? null)),
      h: envelopeOf(request)?.clientInfo?.name ?? '',
    };
  }
}

/**
 * The replica a state names as the only one that can continue its call, or undefined when any
 * replica can (or it is not a state the gateway minted). Read without checking the seal: it only
 * says where to send the retry, and the replica named checks everything as if it came there.
 */
export function holderOf(state: unknown): string | undefined {
  if (typeof state !== 'string' || !state.startsWith(STATE_PREFIX)) return undefined;
  const body = state.slice(STATE_PREFIX.length);
  const dot = body.lastIndexOf('.');
  if (dot <= 0) return undefined;
  try {
    const { r } = JSON.parse(Buffer.from(body.slice(0, dot), 'base64url').toString('utf8')) as {
      r?: unknown;
    };
    return typeof r === 'string' && REPLICA_NAME.test(r) ? r : undefined;
  } catch {
    return undefined;
  }
}

/** What a replica's name may look like (its audit session id). */
const REPLICA_NAME = /^[A-Za-z0-9_-]{1,64}$/;

function refused(why: string): ProtocolError {
  return new ProtocolError(RpcErrorCode.InvalidParams, `requestState refused: ${why}`);
}
