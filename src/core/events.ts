/**
 * The audit log's record types. One JSON object per line. Field names are short and
 * stable: security teams parse these files with their own tools, so a field is never renamed or
 * given a new meaning; new information gets a new optional field.
 *
 * A caller builds an `AuditEvent` and hands it to `AuditLog.append`; the writer adds the
 * `ChainFields` (sequence number, time, writer id, hash chain) and the result is an
 * `AuditRecord`. Lines start with `seq` and `ts` and end with `hash` (the hash covers the line's
 * own text before it); readers should still take fields by name, not by position.
 *
 * Longer than most modules because it is the documented schema of every audit record, field by
 * field: one place a security team reads to parse the trail.
 */

import type { FlowLabel } from '../config/types.js';
import type { Principal } from './principal.js';

/** Added by the writer to every record; never set by callers (their values would be replaced). */
export interface ChainFields {
  /**
   * Position in the hash chain: the record `prev` points to has `seq - 1`. With one gateway per
   * file this counts records 0, 1, 2, ... across restarts and rotated files; when several
   * gateways append to one file, each writer's records count up from the record it joined at.
   */
  seq: number;
  /** When the record was written, ISO 8601 UTC (`2025-01-31T12:00:00.000Z`). */
  ts: string;
  /** The machine's hostname (or the name the writer was given), so a gathered trail says where. */
  host: string;
  /** Random id of the process's log writer (one per `openAuditLog`); chains are per writer. */
  writer: string;
  /**
   * `hash` of the previous record of the same writer; for a writer's first record, the hash of
   * the last record in the file when it started (or `GENESIS_HASH`, 64 zeros, in an empty log).
   */
  prev: string;
  /**
   * SHA-256, lowercase hex, of the line's text up to (not including) `,"hash":`, which is
   * always the last member.
   */
  hash: string;
}

/** The host application, from the `clientInfo` of its `initialize` request. */
export interface ClientInfo {
  name: string;
  version: string;
}

/** What the policy decided, and for `confirm`, what the human answered. */
export interface Decision {
  /** The policy's verdict. `confirm` means a human was asked; see `confirmed`. */
  effect: 'allow' | 'deny' | 'confirm';
  /** Id of the rule that decided; null when no rule matched and the policy's default decided. */
  rule: string | null;
  /** The rule's explanation, when it has one. */
  reason?: string;
  /**
   * Which layer's policy decided, when the organisation's managed settings are in force:
   * `managed` (their policy files) or `user`.
   */
  layer?: 'managed' | 'user';
  /** For `confirm`: how the answer was obtained. */
  how?: ConfirmationMethod;
  /** For `confirm`: true if the call was approved, false if declined or unanswered. */
  confirmed?: boolean;
}

/**
 * - `elicitation`: the host asked the user (MCP elicitation);
 * - `command`: an external confirmation command answered;
 * - `remembered`: an earlier answer for the same tool was reused;
 * - `timeout`: nobody answered in time (counts as declined);
 * - `unavailable`: there was no way to ask (counts as declined).
 */
export type ConfirmationMethod =
  | 'elicitation'
  | 'command'
  | 'remembered'
  | 'timeout'
  | 'unavailable'
  /** Answered through another replica, which ran the call (see ContinuedElsewhereError). */
  | 'continued_elsewhere';

/**
 * How a call ended, as the host saw it:
 * - `ok`: the upstream returned a result without `isError`;
 * - `tool_error`: the upstream returned a result with `isError: true` (including one repair set);
 * - `timeout`: the call's idle or maximum limit fired; the upstream was sent a cancellation;
 * - `cancelled`: the host cancelled the call;
 * - `upstream_failure`: the server was unavailable, or crashed or disconnected during the call;
 * - `denied`: the policy denied it or the human declined (see `decision`);
 * - `invalid_arguments`: its arguments did not match the tool's `inputSchema` (or could not be
 *   checked against it, see `error`); refused before the policy was asked (`decision` is `deny`
 *   with no rule), so it never reached the upstream;
 * - `protocol_error`: the upstream answered with a JSON-RPC error or a malformed result, or the
 *   host's request was refused as malformed (arguments nested too deep);
 * - `queue_full`: the server's concurrency queue was full;
 * - `internal_error`: the gateway itself failed (details in the diagnostic log).
 */
export type CallOutcome =
  | 'ok'
  | 'tool_error'
  | 'timeout'
  | 'cancelled'
  | 'upstream_failure'
  | 'denied'
  | 'invalid_arguments'
  | 'protocol_error'
  | 'queue_full'
  /** No server serves the tool, prompt or resource named (`server` is then empty). */
  | 'unknown_name'
  | 'internal_error';

/**
 * What flow control knew of a request (see the flow guide): the labels it carries, whether its
 * result brought them into the host session, and, for a call that would complete the lethal
 * trifecta, what was decided and why.
 */
export interface FlowRecord {
  /** The request's labels: its server's, the policy files' `labels:` entries', its annotations'. */
  labels: FlowLabel[];
  /**
   * Set when the request's successful result brought its labels into the session: its number
   * among that session's sources (1, 2, ...), which later records name in `lineage`.
   */
  source?: number;
  /** Which host session: the principal's key on a listener, empty on a single host connection. */
  sessionKey?: string;
  /** For a call that would complete the trifecta: `flow.trifecta` as applied to it. */
  trifecta?: 'confirm' | 'deny' | 'audit';
  /** For such a call: the earlier requests that brought each label into the session. */
  lineage?: FlowLineage[];
}

/** One earlier request that brought a label into the session. */
export interface FlowLineage {
  label: FlowLabel;
  /** Its `flow.source` number in its own record. */
  source: number;
  server: string;
  /** What it addressed: the tool's own name, a resource URI or a prompt name. */
  target: string;
  /** The request's method (`tools/call`, `resources/read`, `prompts/get`). */
  method: string;
  /** When its result arrived, ISO 8601 UTC. */
  at: string;
}

/** Fields common to the events a gateway writes. */
export interface GatewayEventBase {
  /** The gateway run's id (random per start): ties a run's records together in a shared file. */
  session: string;
  /**
   * Who the record is about: for a call or request, the principal of the host connection that
   * made it (the token's subject on HTTP, the OS user on stdio); for the gateway's own records
   * (start, stop, upstreams, config), the OS user the gateway runs as. Set on every record
   * mcp-warden writes; optional only so that records of older versions still parse.
   */
  principal?: Principal;
}

/** One `tools/call`, written when it ends, whatever the outcome. */
export interface CallEvent extends GatewayEventBase {
  type: 'call';
  /** The host, when its `initialize` named itself. */
  client?: ClientInfo;
  /**
   * The protocol eras of the host and of the upstream, when either speaks the stateless revision
   * (2026-07-28); both absent when both speak a handshake revision, as every record did before.
   */
  hostEra?: 'legacy' | 'modern';
  upstreamEra?: 'legacy' | 'modern';
  /** The exposed name the host called (`fs__read_text_file`). */
  tool: string;
  /** The upstream server's name in the config. */
  server: string;
  /** The upstream's own tool name (`read_text_file`). */
  upstreamTool: string;
  /** The call's arguments after redaction; absent when the host sent none. */
  args?: unknown;
  decision: Decision;
  /**
   * Set when the call was refused because the tool's definition is not the one pinned:
   * `changed` (differs from its pin), `new` (no pin yet, `pins.onNew: block`) or `unpinnable`
   * (nested too deeply to pin). `decision` is then `deny` with no rule: the policy was not asked.
   */
  pin?: 'changed' | 'new' | 'unpinnable';
  outcome: CallOutcome;
  /** Milliseconds from the call's arrival at the gateway to its answer, human waits included. */
  ms: number;
  /** Names of the result repairs applied, in order; empty when none. */
  repairs: string[];
  /** UTF-8 bytes of the result's JSON as sent to the host; absent when there was no result. */
  resultBytes?: number;
  /** The error message (redacted) for outcomes other than `ok`, when there is one. */
  error?: string;
  /** The result's `structuredContent` after redaction; only when `audit` is configured to log it. */
  structured?: unknown;
  /**
   * The call's number in its session, when a `call_start` record with the same `session` and
   * `call` was written before the call ran (`audit.onFailure: block`).
   */
  call?: number;
  /**
   * The OpenTelemetry trace the call belongs to (32 hex digits), when `telemetry.traces` is on:
   * the host's trace when its `_meta` carried one, else one the gateway started.
   */
  trace?: string;
  /**
   * Flow control's labels for the call, whether its result brought them into the session, and
   * for a call that would complete the lethal trifecta, the decision and its lineage; absent
   * when the call carries no labels and decided nothing.
   */
  flow?: FlowRecord;
  /**
   * With replicas sharing a store: the replicas (their `session`s) that took the host's answers
   * to a question asked during the call and sent them on to this one, which holds the call and
   * ran it on; in the order they first did, each once (a call asks again in a later round, and
   * its next retry may land elsewhere); absent when every answer came here directly.
   */
  continuedVia?: readonly string[];
  /** The replica that took the call over from one that died while it waited for its confirmation. */
  takenOverBy?: string;
  /**
   * With replicas sharing a store: milliseconds the call waited for its turn at the principal's
   * own process of a server that runs one request at a time over all replicas (another request
   * of the same user, here or on another replica, had it); absent when it did not wait.
   */
  leaseWaitMs?: number;
}

/**
 * Written before a call is forwarded, with `audit.onFailure: block` only: the call does not run
 * unless this record is in the file (and on disk, with `audit.fsync`). The `call` record with the
 * same `session` and `call` follows when it ends; a `call_start` without one is a call that was
 * running when the gateway stopped (killed, crashed, or out of disk).
 */
export interface CallStartEvent extends GatewayEventBase {
  type: 'call_start';
  /** The call's number in its session (1, 2, ...), repeated in its `call` (or `request`) record. */
  call: number;
  /** For a request other than a tool call, its method; `tool` and `upstreamTool` then name its target. */
  method?: string;
  /** As in `CallEvent`. */
  tool: string;
  server: string;
  upstreamTool: string;
  /** The call's arguments after redaction; absent when the host sent none. */
  args?: unknown;
}

/**
 * Any routed request other than a tool call, written when it ends: a prompt, a resource read or
 * (un)subscription, a completion (`to_upstream`), or a request an upstream made of the host:
 * sampling, elicitation, roots (`to_host`).
 */
export interface RequestEvent extends GatewayEventBase {
  type: 'request';
  /** The host, when its `initialize` named itself. */
  client?: ClientInfo;
  /**
   * The protocol eras of the host and of the upstream, when either speaks the stateless revision
   * (2026-07-28); both absent when both speak a handshake revision, as every record did before.
   */
  hostEra?: 'legacy' | 'modern';
  upstreamEra?: 'legacy' | 'modern';
  /** The request's method, e.g. `resources/read`, `elicitation/create`. */
  method: string;
  direction: 'to_upstream' | 'to_host';
  /** The upstream server addressed, or the one asking. */
  server: string;
  /** What was addressed, as the upstream names it: a prompt name or a resource URI. */
  target?: string;
  /** The request's arguments (a prompt's arguments, otherwise its params) after redaction. */
  args?: unknown;
  decision: Decision;
  outcome: CallOutcome;
  /** Milliseconds from the request's arrival at the gateway to its answer. */
  ms: number;
  /** UTF-8 bytes of the result's JSON as sent on; absent when there was no result. */
  resultBytes?: number;
  /** Repairs applied to a task's final result (`tasks/result`); absent when none were. */
  repairs?: string[];
  /** The error message (redacted) for outcomes other than `ok`, when there is one. */
  error?: string;
  /** With `audit.onFailure: block`: the number of its `call_start` record. */
  call?: number;
  /** As for `call`: the OpenTelemetry trace id, when `telemetry.traces` is on. */
  trace?: string;
  /** As for `call`: flow control's labels and lineage, when the request carries labels. */
  flow?: FlowRecord;
  /** As for `call`: the replicas that took the host's answers and sent them on to this one. */
  continuedVia?: readonly string[];
  /** As for `call`: how long it waited for its turn at the principal's own process. */
  leaseWaitMs?: number;
  /**
   * `gateway` when the gateway sent the request of its own accord, not the host: it follows a
   * request of the host that was answered and recorded already (the polls of a task that holds
   * its user's turn), and `principal` is that request's. Absent on every request a host made.
   */
  origin?: 'gateway';
}

/** The gateway started serving. */
export interface GatewayStartEvent extends GatewayEventBase {
  type: 'gateway_start';
  /** mcp-warden's version. */
  version: string;
  pid: number;
  /** Absolute path of the config file in use. */
  config?: string;
}

/** The gateway stopped; written after every call record of the run. */
export interface GatewayStopEvent extends GatewayEventBase {
  type: 'gateway_stop';
  /** Why: `stdin_closed`, `SIGTERM`, `SIGINT`, `error`, ... */
  reason: string;
  /** Milliseconds since `gateway_start`. */
  uptimeMs?: number;
  /** The error that stopped it (redacted), for `reason: error`. */
  error?: string;
}

/** An upstream connected and completed its `initialize` handshake. */
export interface UpstreamStartEvent extends GatewayEventBase {
  type: 'upstream_start';
  server: string;
  transport: 'stdio' | 'http';
  /** The child's process id (stdio). */
  pid?: number;
  /** Milliseconds from spawning or connecting to a completed handshake. */
  ms?: number;
  /** Number of tools it listed, when known. */
  tools?: number;
}

/** An upstream's process exited or its connection closed (expected on shutdown, or a crash). */
export interface UpstreamExitEvent extends GatewayEventBase {
  type: 'upstream_exit';
  server: string;
  /** Exit code, or null when ended by a signal or not a process. */
  code?: number | null;
  signal?: string | null;
  /** True when the gateway stopped it (shutdown); false for a crash or failed start. */
  expected: boolean;
  /** What went wrong (redacted), for a crash or failed start. */
  error?: string;
}

/** A crashed upstream is being restarted. */
export interface UpstreamRestartEvent extends GatewayEventBase {
  type: 'upstream_restart';
  server: string;
  /** 1 for the first restart within the restart window. */
  attempt: number;
  /** Backoff before this attempt. */
  delayMs: number;
}

/** An upstream exceeded its restart budget and stays down until the gateway restarts. */
export interface UpstreamFailedEvent extends GatewayEventBase {
  type: 'upstream_failed';
  server: string;
  error?: string;
}

/**
 * A sign-in to a server made through the host (its authorize tool): started (the user was asked
 * to open the sign-in page, or given its URL), or failed (declined, cancelled, timed out, refused
 * by the authorization server). Its success is the `upstream_sign_in` record. `principal` is who
 * signs in. Never a token, a code or the sign-in URL (which carries the state).
 */
export interface UpstreamSignInAttemptEvent extends GatewayEventBase {
  type: 'upstream_sign_in_start' | 'upstream_sign_in_failed';
  server: string;
  /** Why it failed (`upstream_sign_in_failed`). */
  error?: string;
}

/**
 * A host signed in through the listener's front door (`auth.frontDoor`): the browser was sent
 * to the identity provider (`host_sign_in_start`), the provider's ID token was taken and the
 * host given its tokens (`host_sign_in`), or the sign-in stopped (`host_sign_in_failed`, with
 * why). `principal` is who signed in once the ID token named them (anonymous before); never a
 * token.
 */
export interface HostSignInEvent extends GatewayEventBase {
  type: 'host_sign_in_start' | 'host_sign_in' | 'host_sign_in_failed';
  /** The host's client id at the gateway, and the name it registered with. */
  client: string;
  clientName?: string;
  /** Why it failed (`host_sign_in_failed`). */
  error?: string;
}

/**
 * A request on the listener named a 2025-11-25 session that belongs to another principal, and
 * was refused (403) before anything of the session was touched: a host that resumes another
 * user's call stream, or posts or deletes in their session. `principal` is who asked (never the
 * owner); the session is named by the start of its id only, as the diagnostic log names it.
 */
export interface SessionRefusedEvent extends GatewayEventBase {
  type: 'session_refused';
  /** The HTTP method of the request (`GET`, `POST`, `DELETE`). */
  method: string;
  /** The first 12 characters of the session id, and an ellipsis. */
  sessionId: string;
  /** Present (true) when it was a GET resuming a call's stream (it carried `Last-Event-ID`). */
  resumed?: true;
  /**
   * Present when the replica running the call refused a resumed stream that another replica
   * relayed to it for a principal that does not own the session (a second check: the replica
   * the host reached checks first, and should never send such a request on). `from` is the
   * replica that relayed it, `principalKey` whom it asked for, as it named them (the source,
   * the issuer or machine and the subject, separated by NUL characters); no token was verified
   * here, so `principal` is then the gateway's own.
   */
  relayed?: { from: string; principalKey: string };
}

/** A config file was loaded and is in effect. */
export interface ConfigLoadEvent extends GatewayEventBase {
  type: 'config_load';
  file: string;
  /** SHA-256 hex of the file's bytes: proves which configuration was in effect. */
  sha256: string;
  /** Names of the configured (enabled) servers. */
  servers: string[];
}

/** A config file was rejected; `error` lists its problems (redacted). */
export interface ConfigRejectEvent extends GatewayEventBase {
  type: 'config_reject';
  file: string;
  error: string;
}

/**
 * An edit of the config file (or of an env file it names) seen while serving: put in force
 * (`applied: true`, with what it did to the servers), or refused (`applied: false`, with why),
 * in which case the config in force before it stays.
 */
export interface ConfigReloadEvent extends GatewayEventBase {
  type: 'config_reload';
  file: string;
  applied: boolean;
  /** SHA-256 hex of the file's bytes as read for this reload, when it could be read. */
  sha256?: string;
  /** Servers started, stopped, and restarted for a changed entry, by name. */
  added: string[];
  removed: string[];
  changed: string[];
  /** Settings the edit changed that only a restart puts in force, by key. */
  restartNeeded?: string[];
  /** Why the edit was refused (its problems, with file:line:column, redacted). */
  error?: string;
}

/** A policy file was loaded and is in effect. */
export interface PolicyLoadEvent extends GatewayEventBase {
  type: 'policy_load';
  file: string;
  sha256: string;
  /** Number of rules it contributed. */
  rules: number;
}

/** A policy file was rejected; `error` lists its problems (redacted). */
export interface PolicyRejectEvent extends GatewayEventBase {
  type: 'policy_reject';
  file: string;
  error: string;
}

/**
 * A tool's definition was pinned: seen for the first time under `pins.onNew: pin` (`how: new`),
 * or found pinned anew in the pins file after the gateway had flagged it (`how: accepted`, by
 * `mcp-warden pins accept`).
 */
export interface ToolPinnedEvent extends GatewayEventBase {
  type: 'tool_pinned';
  server: string;
  /** The upstream's own tool name (pins do not depend on the exposed name, which config can change). */
  upstreamTool: string;
  /** SHA-256 of the pinned definition. */
  sha256: string;
  how: 'new' | 'accepted';
  /** For `accepted`: the operating-system user who ran `mcp-warden pins accept`. */
  by?: string;
  /** For `accepted`: SHA-256 of the pin it replaced, when there was one. */
  previousSha256?: string;
}

/**
 * A tool's definition does not match its pin, or it has none and `pins.onNew` is `block`.
 * Written once per gateway run for each definition seen, not at every re-listing.
 */
export interface ToolChangedEvent extends GatewayEventBase {
  type: 'tool_changed';
  server: string;
  /** The upstream's own tool name. */
  upstreamTool: string;
  /** The pinned hash; null when the tool has no pin. */
  old: string | null;
  /** The hash of the definition as listed now. */
  new: string;
  /** The pinned fields that differ; for a tool without a pin, every field it has. */
  fields: string[];
  /** `block`: unlisted and refused until accepted; `warn`: still served. */
  action: 'block' | 'warn';
}

/**
 * A tool's definition would have been rejected by a strict host and the gateway repaired it
 * without changing its meaning (the host is served the repaired definition). Written once per
 * gateway run for each repaired definition seen.
 */
export interface ToolRepairedEvent extends GatewayEventBase {
  type: 'tool_repaired';
  server: string;
  /** The upstream's own tool name. */
  upstreamTool: string;
  /** What was repaired, one entry per change, e.g. `outputSchema.properties.v: true became {}`. */
  repairs: string[];
}

/**
 * Result guardrails found secrets or personal data in a result on its way to the host, and what
 * they did (see docs/guides/result-guardrails.md). Names what was found and where, never the value.
 */
export interface ResultGuardedEvent extends GatewayEventBase {
  type: 'result_guarded';
  server: string;
  /** The kind of request answered: `tools/call`, `tasks/result`, `resources/read`, `prompts/get`. */
  kind: string;
  /** The upstream's own tool or prompt name, or the resource URI. */
  target: string;
  /** The strongest action taken on the result: `block`, `redact`, else `audit`. */
  action: 'redact' | 'block' | 'audit';
  /** One entry per category per place: `location` is a path such as `structuredContent.user.token`. */
  findings: { category: string; action: 'redact' | 'block' | 'audit'; location: string; count: number }[];
}

/**
 * Written by the audit writer itself, first thing after writing works again: records that
 * could not be written in between (disk full, permissions) are counted here, so the loss is
 * visible in the chain instead of silent.
 */
export interface AuditGapEvent {
  type: 'audit_gap';
  /** Records that could not be written. */
  lost: number;
  /** When the first of them was attempted. */
  since: string;
  /** The last error seen, e.g. `ENOSPC: no space left on device, write`. */
  error: string;
  /**
   * True when the record right before this one is a line cut short (a write torn by a kill, a
   * crash or a full disk): this record is the writer's recovery, chained to the last whole record
   * before the cut line, and `audit verify` reports the pair as a crash gap, not as tampering.
   */
  torn?: boolean;
  /** The writer's session, when it was given one (the gateway's). */
  session?: string;
}

/**
 * A signed checkpoint, written by the writer itself at an interval and when it closes, when a
 * checkpoint key is configured. It signs the head of the writer's chain (`prev`, the hash of
 * the record before it, and `seq`), so whoever holds the public key can tell that every record
 * the chain reaches back to is as the gateway wrote it, and a copy kept elsewhere (a SIEM) can
 * later prove that the trail still reaches this far.
 */
export interface CheckpointEvent {
  type: 'checkpoint';
  /** Records in the chain before this one (its `seq`: chains count from 0). */
  records: number;
  /** Which key signed: the first 16 hex digits of the SHA-256 of its public key (SPKI DER). */
  key: string;
  /**
   * Ed25519 signature, base64, of the text `checkpointMessage` builds from this record's
   * `writer`, `seq`, `ts`, `prev` and `records` (see checkpoint.ts).
   */
  sig: string;
  /** The writer's session, when it was given one (the gateway's). */
  session?: string;
}

/**
 * A configured server the organisation's managed settings do not let start (not allowed, or
 * denied); written at start for each such server.
 */
export interface ServerBlockedEvent extends GatewayEventBase {
  type: 'server_blocked';
  server: string;
  /** The rule (or the missing allow-list entry) and where the managed file says it. */
  reason: string;
  /** The managed settings file. */
  managed: string;
}

/**
 * A `rateLimits:` rule's bucket ran dry (`phase: begin`, at the first refusal) or let a call
 * through again (`phase: end`, with how many it refused meanwhile): one pair per burst, not a
 * record per refused call, so a client hammering a limit cannot flood the trail. `principal` is
 * whose bucket it is (absent for a rule `per: everyone`).
 */
export interface RateLimitedEvent extends GatewayEventBase {
  type: 'rate_limited';
  phase: 'begin' | 'end';
  /** The rule's place in `rateLimits` (from 0), its rate and burst as configured. */
  rule: number;
  rate: string;
  burst: number;
  /** The request that began or ended the burst: its server and, for a tool call, its tool. */
  server: string;
  tool?: string;
  /** `end`: the requests refused in the burst. */
  refused?: number;
}

/**
 * Someone signed in to an HTTP upstream through its OAuth authorization server (the CLI's
 * `auth login`, or the host's sign-in). `principal` is who the tokens are kept for; never a token.
 */
export interface UpstreamSignInEvent extends GatewayEventBase {
  type: 'upstream_sign_in';
  server: string;
  /** The scopes granted (else those asked for). */
  scopes: string[];
  /** Who the authorization server says signed in, when it said. */
  subject?: string;
}

/**
 * Renewing an upstream's access token failed. When the authorization server refused the refresh
 * token (revoked, expired), the tokens were forgotten and the user must sign in again.
 */
export interface UpstreamRefreshFailedEvent extends GatewayEventBase {
  type: 'upstream_refresh_failed';
  server: string;
  /** What the authorization server (or the network) answered. */
  error: string;
  /** True when the tokens were forgotten and a new sign-in is needed. */
  signedOut: boolean;
}

/**
 * The gateway exchanged a principal's own token for one meant for an HTTP upstream (RFC 8693),
 * or tried to and failed. `principal` is whose token it was; never a token.
 */
export interface UpstreamTokenExchangeEvent extends GatewayEventBase {
  type: 'upstream_token_exchange';
  server: string;
  outcome: 'success' | 'failure';
  /** When the exchanged token expires (ISO 8601), when the identity provider said. */
  expiresAt?: string;
  /** The scopes granted (else those asked for). */
  scopes?: string[];
  /** Why it failed: the identity provider's error code and description, or why it was not reached. */
  error?: string;
}

/** Someone signed out of an HTTP upstream (`auth logout`): its tokens are forgotten. */
export interface UpstreamSignOutEvent extends GatewayEventBase {
  type: 'upstream_sign_out';
  server: string;
  /** Whether the authorization server was asked to revoke them (RFC 7009) and agreed. */
  revoked: boolean;
}

/**
 * A sandboxed stdio server's process was started, with what its sandbox grants it (besides the
 * system folders and its own program and package, which it may always read).
 */
export interface ServerStartEvent extends GatewayEventBase {
  type: 'server_start';
  server: string;
  sandbox: {
    /** Folders it may read. */
    read: string[];
    /** Folders it may read and write (its private temp folder is `temp`). */
    write: string[];
    /** `false`: no network; else the domains it may reach through the filtering proxy. */
    network: false | string[];
    /** Its private temp folder (TMPDIR), removed when it exits. */
    temp: string;
  };
}

/**
 * The sandbox refused something a server's process tried: a connection the filtering proxy
 * refused (`network-outbound host:port`), or a violation the platform reported.
 */
export interface SandboxDeniedEvent extends GatewayEventBase {
  type: 'sandbox_denied';
  server: string;
  /** What it tried to reach or touch, e.g. `example.org:443`. */
  target: string;
  /** The refusal as the sandbox reported it. */
  detail: string;
}

export type LifecycleEvent =
  | ServerStartEvent
  | SandboxDeniedEvent
  | ServerBlockedEvent
  | RateLimitedEvent
  | UpstreamSignInEvent
  | UpstreamRefreshFailedEvent
  | UpstreamSignOutEvent
  | UpstreamTokenExchangeEvent
  | GatewayStartEvent
  | GatewayStopEvent
  | UpstreamStartEvent
  | UpstreamExitEvent
  | UpstreamRestartEvent
  | UpstreamFailedEvent
  | UpstreamSignInAttemptEvent
  | HostSignInEvent
  | SessionRefusedEvent
  | ConfigLoadEvent
  | ConfigRejectEvent
  | ConfigReloadEvent
  | PolicyLoadEvent
  | PolicyRejectEvent
  | ToolPinnedEvent
  | ToolChangedEvent
  | ToolRepairedEvent
  | ResultGuardedEvent;

/** What callers append. */
export type AuditEvent = CallEvent | RequestEvent | CallStartEvent | LifecycleEvent;

export type AuditEventType = AuditEvent['type'] | AuditGapEvent['type'] | CheckpointEvent['type'];

/** A line of the audit log, as written and as read back. */
export type AuditRecord = (AuditEvent | AuditGapEvent | CheckpointEvent) & ChainFields;

/** `prev` of the first record of a chain: there is no previous record. */
export const GENESIS_HASH = '0'.repeat(64);
