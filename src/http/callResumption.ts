import {
  RpcErrorCode,
  isResponse,
  serializeMessage,
  type JsonRpcMessage,
  type Params,
} from '../core/protocol/jsonRpc.js';
import {
  HOST_CANCELLED,
  type PendingCall,
  type ReplicaName,
  type ResumableCalls,
  type StreamPosition,
} from './resumableCalls.js';
import { endWithError, errorEvent, streamHeaders, type AnswerStream } from './answerStream.js';
import type { MirroredAnswer, Reply } from './retryRelay.js';
import type { PlainRequest, RequestId } from './plainRequest.js';

/** What a session's transport needs to make its calls' streams resumable on any replica. */
export interface TransportResume {
  readonly calls: ResumableCalls;
  /** The digest of the principal whose session this is (as its record keeps it). */
  readonly owner: string;
  /** Whether replica `replica` is up; rejects when the store cannot say. */
  alive(replica: string): Promise<boolean>;
  /**
   * Asks replica `to` (its audit session), which runs the call, to stream on `out` what comes
   * after event `lastEventId` of session `session`'s call: the call stays there.
   */
  relayStream(to: string, session: string, lastEventId: string, out: MirroredAnswer): { cancel(): void };
  /** Takes one of this replica's slots for resuming another's stream; false when none is free. */
  acquire(): boolean;
  release(): void;
  readonly log: (message: string) => void;
}

/** What the session's transport lends the resumption of its calls. */
export interface CallResumptionOptions {
  readonly resume: TransportResume;
  /** This replica's tag, when replicas share the session. */
  readonly replica: string | undefined;
  /** The session's id, once the host's initialize set it up. */
  readonly sessionId: () => string | undefined;
  /** Whether the session is over (its transport closed). */
  readonly ended: () => boolean;
  /** Whether the host's request `id` is still being answered here. */
  readonly running: (id: RequestId) => boolean;
  /** Hands the gateway connection a message from the host (an answer to one of its questions). */
  readonly deliver: (message: JsonRpcMessage) => void;
  /**
   * Takes `request` as if the host had just sent it (it is then open, and answered as any), for
   * a call replica `takenOverBy` (this one's audit session) took over: the routed call says so.
   */
  readonly receive: (request: PlainRequest, takenOverBy: string) => void;
  /** A new answer stream for request `id` on `res`, its events numbered. */
  readonly openStream: (res: Reply, id: RequestId, sessionId: string) => AnswerStream;
  /**
   * Continues on `res` the stream of call `id`, from the events kept after position `after`;
   * false when nothing of the call is kept here.
   */
  readonly pickUp: (res: Reply, id: RequestId, sessionId: string, after: number) => boolean;
}

/** A call this replica took over from one that died: the question it waits for the answer to. */
interface Takeover {
  /** The id (tagged) of the question the host was asked on the replica that died. */
  readonly question: string;
  /** The host's answer to it, once it came. */
  answer?: JsonRpcMessage;
  /** The id this connection's peer gave the same question, asked again here (never sent). */
  asked?: number;
}

/**
 * How one session's calls outlive the replica that runs them: the gateway's confirmations are
 * recorded in the shared store before the host sees them, and the host's answer to one is
 * claimed there before it goes on; a host whose call stream broke resumes it on any replica,
 * which picks the stream up again when the call runs there, takes the call over when its
 * replica died waiting for the confirmation, and otherwise says at once what became of it.
 */
export class CallResumption {
  private readonly options: CallResumptionOptions;
  /** The requests answered on the transport's own streams, as the host sent them. */
  private readonly requests = new Map<RequestId, PlainRequest>();
  /** Confirmations recorded in the store, by the peer's id of the question: claimed when answered. */
  private readonly recorded = new Map<number, RequestId>();
  /** Calls taken over from a replica that died, by request id, and by their question's id. */
  private readonly takeovers = new Map<RequestId, Takeover>();
  private readonly byQuestion = new Map<string, RequestId>();

  constructor(options: CallResumptionOptions) {
    this.options = options;
  }

  /** Keeps the host's request as it sent it, should its call need recording (see `confirmationOf`). */
  track(request: PlainRequest): void {
    this.requests.set(request.id, request);
  }

  /** Forgets request `id` once it is answered, with the confirmations recorded for it. */
  settled(id: RequestId): void {
    if (this.requests.delete(id) && this.recorded.size > 0)
      for (const [question, call] of this.recorded) if (call === id) this.recorded.delete(question);
  }

  /** Forgets every request and recorded confirmation: the session is closing. */
  clear(): void {
    this.requests.clear();
    this.recorded.clear();
  }

  /**
   * A host that gives up on a call whose stream broke cancels it, and the cancellation may come
   * here, where the call is not running: it claims the call's record in the store for the host,
   * so that no replica takes it over and runs it after all. Nothing waits for it.
   */
  cancelElsewhere(requestId: RequestId): void {
    const { resume } = this.options;
    const session = this.options.sessionId();
    if (session === undefined || this.options.running(requestId)) return;
    if (typeof requestId !== 'string' && typeof requestId !== 'number') return;
    resume.calls
      .cancel(session, requestId)
      .catch((error: unknown) =>
        resume.log(
          `the host's cancellation of request ${JSON.stringify(requestId)} could not be noted in the shared store: ${(error as Error).message}`,
        ),
      );
  }

  /**
   * Takes the host's answer to the question a replica that died asked about a call this one
   * took over: it answers the same question asked again here (kept from the host).
   */
  answersTakeover(message: JsonRpcMessage): boolean {
    const { id } = message as { id?: unknown };
    const requestId = typeof id === 'string' ? this.byQuestion.get(id) : undefined;
    const takeover = requestId === undefined ? undefined : this.takeovers.get(requestId);
    if (takeover === undefined) return false;
    takeover.answer ??= message;
    this.answerTakenOver(requestId!, takeover);
    return true;
  }

  /**
   * Gives the question asked again in a taken-over call the host's answer, once both are here,
   * and once this replica has claimed the call again: it recorded the call anew when it took
   * it over, so a third replica may have taken it in turn, believing this one gone.
   */
  private answerTakenOver(requestId: RequestId, takeover: Takeover): void {
    const { answer, asked } = takeover;
    if (answer === undefined || asked === undefined) return;
    takeover.asked = undefined;
    this.claimThenDeliver(requestId, { ...answer, id: asked } as JsonRpcMessage);
  }

  /**
   * The host's answer to a confirmation recorded in the store goes on only once this replica
   * has claimed the call there: another replica may have taken it over, believing this one
   * gone. Then, or when the store cannot say, the question fails (the call does not run here).
   */
  claimsRecorded(message: JsonRpcMessage): boolean {
    const { id } = message as { id?: unknown };
    const requestId = typeof id === 'number' ? this.recorded.get(id) : undefined;
    if (requestId === undefined || this.options.sessionId() === undefined) return false;
    this.recorded.delete(id as number);
    this.claimThenDeliver(requestId, message);
    return true;
  }

  /** Claims call `requestId` in the store, then hands the connection `answer`, or its failure. */
  private claimThenDeliver(requestId: RequestId, answer: JsonRpcMessage): void {
    const { resume } = this.options;
    const session = this.options.sessionId();
    if (session === undefined) return;
    const failed = (why: string): JsonRpcMessage =>
      ({
        jsonrpc: '2.0',
        id: (answer as { id: unknown }).id,
        error: { code: RpcErrorCode.InternalError, message: why },
      }) as JsonRpcMessage;
    resume.calls.claim(session, requestId, this.options.replica ?? '').then(
      (claim) => {
        const by = claim !== undefined && 'takenBy' in claim ? claim.takenBy : undefined;
        this.options.deliver(
          by === undefined || by.replica === this.options.replica
            ? answer
            : failed(
                by === HOST_CANCELLED
                  ? 'the host cancelled the call through another replica'
                  : `the call was taken over by replica ${by.auditSession}, which runs it`,
              ),
        );
      },
      (error: unknown) =>
        this.options.deliver(
          failed(`the answer could not be claimed in the shared store: ${(error as Error).message}`),
        ),
    );
  }

  /**
   * Serves a host's GET that resumes a call's stream after it broke (its `Last-Event-ID` names
   * the call and the replica that ran it). The stream of a call still running here is picked up
   * again; a call whose replica died while it waited for its confirmation is taken over here,
   * once over all replicas; any other call gets an error saying what became of it at once,
   * rather than the host waiting for an answer that will not come.
   */
  async resume(res: Reply, position: StreamPosition, sessionId: string, lastEventId: string): Promise<void> {
    const { resume } = this.options;
    const { requestId } = position;
    // The stream it resumes had its answer: nothing more will come on it.
    if (position.position === 'end') {
      res.writeHead(204);
      res.end();
      return;
    }
    if (position.replica === this.options.replica || this.takeovers.has(requestId))
      return this.resumeHere(res, position, sessionId, position.position);
    const release = this.slotFor(res, position);
    if (release === undefined) return;
    try {
      if (await resume.alive(position.replica)) {
        this.relayFrom(res, position, sessionId, lastEventId, release);
        return;
      }
      const claim = await resume.calls.claim(sessionId, requestId, position.replica);
      if (claim === undefined || !('mine' in claim)) {
        release();
        return this.notTakenOver(res, position, sessionId, claim?.takenBy);
      }
      await this.holdThenTakeOver(res, position, sessionId, claim, release);
    } catch (error) {
      release();
      return endWithError(
        res,
        sessionId,
        position,
        `the stream of ${shownOf(position)} could not be resumed: ${(error as Error).message}`,
      );
    }
  }

  /**
   * Resumes the stream of a call this replica runs, or took over: picked up from the events kept
   * of it after position `after`, or a new stream for a call still running with none kept; else
   * the call has ended.
   */
  private resumeHere(res: Reply, position: StreamPosition, sessionId: string, after: number): void {
    const { requestId } = position;
    if (this.options.pickUp(res, requestId, sessionId, after)) return;
    if (this.options.running(requestId)) {
      this.options.openStream(res, requestId, sessionId).prime();
      return;
    }
    endWithError(
      res,
      sessionId,
      position,
      `the call of ${shownOf(position)} has ended: its answer cannot be sent again`,
    );
  }

  /**
   * Takes one of this replica's slots for resuming another's stream, given back once, by the
   * function it returns or when `res` closes; undefined when none is free (`res` then says so).
   */
  private slotFor(res: Reply, position: StreamPosition): (() => void) | undefined {
    const { resume } = this.options;
    if (!resume.acquire()) {
      resume.log(
        `a host's stream of ${shownOf(position)} could not be resumed here: too many are being resumed at once`,
      );
      res.writeHead(503, { 'Retry-After': '5', 'Content-Type': 'text/plain' });
      res.end('too many streams are being resumed; retry later');
      return undefined;
    }
    let held = true;
    const release = () => {
      if (held) resume.release();
      held = false;
    };
    res.once('close', release);
    return release;
  }

  /**
   * Tells the host what became of a call whose replica died and that this one could not claim:
   * its host cancelled it, another replica took it over (`by`), or it was running and is lost.
   */
  private notTakenOver(
    res: Reply,
    position: StreamPosition,
    sessionId: string,
    by: ReplicaName | undefined,
  ): void {
    const shown = shownOf(position);
    const elsewhere =
      by === HOST_CANCELLED
        ? `the host cancelled the call of ${shown}`
        : by !== undefined && by.replica !== position.replica
          ? `the call of ${shown} was already taken over by replica ${by.auditSession}`
          : `the call of ${shown} was lost with replica ${position.auditSession}, which stopped while it ran: it may or may not have run; check before calling again`;
    this.options.resume.log(
      `a host resumed the stream of ${shown} in session ${sessionId.slice(0, 12)}…: ${elsewhere}`,
    );
    endWithError(res, sessionId, position, elsewhere);
  }

  /**
   * Takes over here the call this replica claimed from one that died: recorded anew in the
   * store under this replica, then run (see `takeOver`), unless the host went meanwhile.
   * Rejects when the store cannot record it (nothing is then waited for here).
   */
  private async holdThenTakeOver(
    res: Reply,
    position: StreamPosition,
    sessionId: string,
    claim: { readonly mine: PendingCall; readonly answer?: unknown },
    release: () => void,
  ): Promise<void> {
    const { resume } = this.options;
    if (res.destroyed || this.options.ended()) {
      release();
      return;
    }
    // The host's answer may be sent on here as soon as the call is claimed: it is waited for
    // from now on. The call is recorded anew here before the host sees anything of this
    // replica, so that a third can take it over should this one die too.
    const forget = this.adopt(claim.mine, claim.answer);
    try {
      await resume.calls.hold(sessionId, {
        ...claim.mine,
        askedBy: resume.calls.auditSession,
        expiresAt: Date.now() + resume.calls.waitMs,
      });
    } catch (error) {
      forget();
      throw error;
    }
    if (res.destroyed || this.options.ended()) {
      forget();
      release();
      return;
    }
    this.takeOver(res, claim.mine, sessionId, () => {
      forget();
      release();
    });
    resume.log(
      `the call of ${shownOf(position)} in session ${sessionId.slice(0, 12)}… was taken over here from replica ${position.auditSession}, which stopped while its confirmation was pending`,
    );
  }

  /**
   * The host's stream broke, but the replica running the call is up: the call stays there, and
   * that replica streams what comes after `lastEventId` here, written on `res` as it comes.
   * When it stops answering for the store's timeout, the call is reported lost with it.
   */
  private relayFrom(
    res: Reply,
    position: StreamPosition,
    sessionId: string,
    lastEventId: string,
    release: () => void,
  ): void {
    let headed = false;
    const head = (status: number, headers: Record<string, unknown>) => {
      if (headed) return;
      headed = true;
      res.writeHead(status, headers as Record<string, string>);
    };
    const shown = `request ${JSON.stringify(position.requestId)}`;
    const sent = this.options.resume.relayStream(position.auditSession, sessionId, lastEventId, {
      head: (status, headers) => head(status, headers),
      chunk: (text) => {
        head(200, streamHeaders(sessionId));
        res.write(text);
      },
      end: (text) => {
        head(200, streamHeaders(sessionId));
        res.end(text);
      },
      lost: (why) => {
        const message = `the call of ${shown} was lost with replica ${position.auditSession}, which runs it: ${why}; it may or may not have run; check before calling again`;
        this.options.resume.log(`a host's stream of ${shown} relayed from another replica: ${message}`);
        if (!headed) return endWithError(res, sessionId, position, message);
        if (!res.writableEnded && !res.destroyed) res.end(errorEvent(position, message));
      },
    });
    res.once('close', () => {
      sent.cancel();
      release();
    });
  }

  /**
   * Waits here for the host's answer to the question a replica that died asked about `pending`
   * (or takes `answer`, kept for it in the store); returns how to stop waiting.
   */
  private adopt(pending: PendingCall, answer: unknown): () => void {
    const { request } = pending;
    const takeover: Takeover = {
      question: pending.question,
      ...(isAnswer(answer) && { answer }),
    };
    this.takeovers.set(request.id, takeover);
    this.byQuestion.set(pending.question, request.id);
    return () => {
      if (this.takeovers.get(request.id) !== takeover) return;
      this.byQuestion.delete(pending.question);
      this.takeovers.delete(request.id);
    };
  }

  /**
   * Runs here the call a replica that died was asking the host to confirm: the host's request
   * as it sent it, through the whole pipeline again (the policy decides afresh), answered on
   * the resumed stream. Its confirmation is not shown to the user twice: the question asked
   * again here waits for the host's answer to the first one (see `answersTakeover`).
   */
  private takeOver(res: Reply, pending: PendingCall, sessionId: string, done: () => void): void {
    const { request } = pending;
    const params: Params =
      typeof request.params === 'object' && request.params !== null ? (request.params as Params) : {};
    this.options.openStream(res, request.id, sessionId).prime();
    res.once('close', done);
    const message: PlainRequest = { jsonrpc: '2.0', id: request.id, method: request.method, params };
    this.options.receive(message, this.options.resume.calls.auditSession);
  }

  /**
   * Puts the gateway's own confirmation of call `requestId` to the host. With resumable calls it
   * is recorded in the store first, so another replica can take the call over should this one
   * die while the user decides; a confirmation that cannot be recorded is not asked (the call
   * fails closed). In a call taken over, it is not sent at all: the host already has it.
   */
  confirmationOf(
    requestId: RequestId,
    questionId: number,
    sent: JsonRpcMessage,
    stream: AnswerStream,
  ): Promise<void> {
    const takeover = this.takeovers.get(requestId);
    if (takeover !== undefined) {
      takeover.asked = questionId;
      this.answerTakenOver(requestId, takeover);
      return Promise.resolve();
    }
    const { resume } = this.options;
    const request = this.requests.get(requestId);
    const session = this.options.sessionId();
    if (request === undefined || session === undefined) {
      stream.event(serializeMessage(sent));
      return Promise.resolve();
    }
    const entry: PendingCall = {
      request: {
        id: request.id,
        method: request.method,
        ...(request.params !== undefined && { params: request.params }),
      },
      question: String((sent as { id: unknown }).id),
      owner: resume.owner,
      askedBy: resume.calls.auditSession,
      expiresAt: Date.now() + resume.calls.waitMs,
    };
    return resume.calls.record(session, entry).then(
      () => {
        this.recorded.set(questionId, requestId);
        stream.event(serializeMessage(sent));
      },
      (error: unknown) => {
        throw new Error(
          `the confirmation could not be recorded in the shared store, so it was not asked: ${(error as Error).message}`,
        );
      },
    );
  }
}

/** How a log line or an error names the call a stream belongs to. */
function shownOf(position: StreamPosition): string {
  return `request ${JSON.stringify(position.requestId)}`;
}

/** Whether `value`, as the store kept it, is a host's answer (a JSON-RPC response). */
function isAnswer(value: unknown): value is JsonRpcMessage {
  return typeof value === 'object' && value !== null && isResponse(value as JsonRpcMessage);
}
