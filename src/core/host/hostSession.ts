import type { ClientRequestsConfig } from '../../config/types.js';
import type { ClientInfo } from '../events.js';
import { MethodNotFoundError } from '../errors.js';
import type { Params } from '../protocol/jsonRpc.js';
import type { Outcome } from '../rpc/outcome.js';
import type { OutgoingOptions, RpcPeer } from '../rpc/peer.js';

/** Client capabilities of the host that upstreams may use through the gateway. */
export const FORWARDED_CLIENT_CAPABILITIES = ['sampling', 'elicitation', 'roots'] as const;
export type ForwardedCapability = (typeof FORWARDED_CLIENT_CAPABILITIES)[number];

/**
 * The requests a server may make of the host, and the client capability (and the server's
 * config key of the same name) each needs. The one list of them: routing, the host session and
 * the config's refusals all read it.
 */
export const CAPABILITY_FOR: ReadonlyMap<string, ForwardedCapability> = new Map([
  ['sampling/createMessage', 'sampling'],
  ['elicitation/create', 'elicitation'],
  ['roots/list', 'roots'],
]);

/** The task methods a server may send the host, about a task it had the host create. */
export const TASK_FOLLOW_UPS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/result', 'tasks/cancel']);

/** A server lists the tasks it had the host create (the gateway filters the host's list). */
export const TASKS_LIST = 'tasks/list';

/**
 * The host's `tasks` client capability as a server is told it: the kinds of request the host
 * runs as tasks, for those this server may make (in `forwarded`), with `cancel` and `list` as
 * the host declares them. A server's `tasks/list` shows it only the tasks it had the host
 * create (the gateway filters the host's list), never another server's. Undefined when nothing
 * is left.
 */
function hostTasksFor(tasks: unknown, forwarded: Params): Params | undefined {
  if (typeof tasks !== 'object' || tasks === null) return undefined;
  const { cancel, list, requests } = tasks as Params;
  const kinds: Params = {};
  if (typeof requests === 'object' && requests !== null)
    for (const kind of ['sampling', 'elicitation'] as const) {
      const methods = (requests as Params)[kind];
      if (methods !== undefined && forwarded[kind] !== undefined) kinds[kind] = methods;
    }
  if (Object.keys(kinds).length === 0) return undefined;
  const out: Params = { requests: kinds };
  if (cancel !== undefined) out.cancel = cancel;
  if (list !== undefined) out.list = list;
  return out;
}

/**
 * Why an `elicitation/create` cannot be put to a host that declared `declared` as its elicitation
 * capability, or undefined when it can. An empty object means form mode only (as before URL mode
 * existed); otherwise each mode is declared by its own key.
 */
export function elicitationModeRefused(params: Params | undefined, declared: unknown): string | undefined {
  if (typeof declared !== 'object' || declared === null) return undefined;
  const mode = params?.mode === 'url' ? 'url' : 'form';
  const modes = declared as Params;
  const formOnly = modes.form === undefined && modes.url === undefined;
  if (mode === 'form' ? formOnly || modes.form !== undefined : modes.url !== undefined) return undefined;
  return `the host connected to mcp-warden did not declare ${mode}-mode elicitation (elicitation.${mode})`;
}

/** Where a question for the host comes from (a host of the stateless revision is asked within a call). */
export interface AskOrigin {
  /** The host request being served (the gateway's own questions: confirmation). */
  readonly hostRequest?: object;
  /** The upstream that asked (its request to the client). */
  readonly server?: string;
}

/** Carries a question for the host (sampling, elicitation, roots) to a host of the stateless revision. */
export type InputBridge = Pick<HostSession, 'ask'>;

/**
 * Where a server's request that belongs to a task held for the host is kept, as a question for
 * the host's next `tasks/get` (tasks/taskInput.ts): undefined for any other request. The host's
 * session is handed one rather than reaching up for it.
 */
export interface TaskQuestions {
  ask(method: string, params: Params | undefined, options: OutgoingOptions): Promise<Outcome> | undefined;
}

/** The lists a host may have seen (and so may be told have changed). */
export type HostList = 'tools' | 'prompts' | 'resources';

/**
 * What the host told the gateway, and how to ask it something. Features and the router speak to
 * the host only through this, so a second kind of session (one rebuilt from each request's own
 * envelope, as the stateless protocol revision has it) can stand behind the same interface.
 */
export interface HostSession {
  /** The host as it introduced itself (for the audit trail's "who"). */
  readonly info: ClientInfo | undefined;
  readonly protocolVersion: string | undefined;
  /** The log level the host asked for; undefined until it does. */
  readonly logLevel: string | undefined;
  /**
   * Whether the host declared this client capability; `origin` is the host request being served
   * (a host of the stateless revision declares capabilities per request).
   */
  can(capability: ForwardedCapability, origin?: AskOrigin): boolean;
  /** Whether the host declared this extension (`capabilities.extensions[id]`), e.g. MCP Apps. */
  declaresExtension(id: string): boolean;
  /**
   * The capabilities an upstream is told the client has: what the host declared, of those
   * forwarded, less what the config refuses that server; fixed roots are declared whatever the
   * host said.
   */
  capabilitiesFor(requests: ClientRequestsConfig): Params;
  /**
   * Asks the host (sampling, elicitation, roots). Rejects with MethodNotFoundError, naming the
   * capability, when the host did not declare it; with the host's own error when it answers one.
   * `origin` is the host request being served, when the question belongs to one.
   */
  ask(
    method: string,
    params: Params | undefined,
    options: OutgoingOptions,
    origin?: AskOrigin,
  ): Promise<Outcome>;
  /** The host has fetched this list, so a change to it is worth announcing. */
  sawList(list: HostList): void;
  hasSeen(list: HostList): boolean;
  notify(method: string, params?: Params): void;
}

/**
 * A session set up by `initialize` (protocol revisions up to 2025-11-25): the host's
 * capabilities and identity are fixed for the connection, and the gateway asks it with
 * server-to-client requests on the same connection.
 */
export class InitializedHostSession implements HostSession {
  private capabilities: Params = {};
  private _info: ClientInfo | undefined;
  private _protocolVersion: string | undefined;
  private _logLevel: string | undefined;
  private readonly listed = new Set<HostList>();

  constructor(private readonly peer: RpcPeer) {}

  get info(): ClientInfo | undefined {
    return this._info;
  }
  get protocolVersion(): string | undefined {
    return this._protocolVersion;
  }
  get logLevel(): string | undefined {
    return this._logLevel;
  }

  /** Records what `initialize` said; `protocolVersion` is the one the gateway answered with. */
  initialized(params: Params, protocolVersion: string): void {
    const capabilities = params.capabilities;
    this.capabilities =
      typeof capabilities === 'object' && capabilities !== null ? (capabilities as Params) : {};
    const info = params.clientInfo as Params | undefined;
    // Frozen: it names the host in every audit record, which can then write its text once.
    if (typeof info?.name === 'string')
      this._info = Object.freeze({
        name: info.name,
        version: typeof info.version === 'string' ? info.version : '',
      });
    this._protocolVersion = protocolVersion;
  }

  setLogLevel(level: string): void {
    this._logLevel = level;
  }

  can(capability: ForwardedCapability): boolean {
    return this.capabilities[capability] !== undefined;
  }

  declaresExtension(id: string): boolean {
    const extensions = this.capabilities.extensions;
    return typeof extensions === 'object' && extensions !== null && (extensions as Params)[id] !== undefined;
  }

  capabilitiesFor(requests: ClientRequestsConfig): Params {
    const declared: Params = {};
    for (const name of FORWARDED_CLIENT_CAPABILITIES) {
      if (requests[name] === false) continue;
      if (name === 'roots' && Array.isArray(requests.roots)) declared.roots = { listChanged: false };
      else if (this.capabilities[name] !== undefined) declared[name] = this.capabilities[name];
    }
    const tasks = hostTasksFor(this.capabilities.tasks, declared);
    if (tasks !== undefined) declared.tasks = tasks;
    return declared;
  }

  ask(method: string, params: Params | undefined, options: OutgoingOptions): Promise<Outcome> {
    // A server following up a task it had the host create (the router checked it is its own).
    if (TASK_FOLLOW_UPS.has(method) || method === TASKS_LIST) {
      const tasks = this.capabilities.tasks as Params | undefined;
      if (tasks === undefined)
        return Promise.reject(
          new MethodNotFoundError('the host connected to mcp-warden did not declare the tasks capability'),
        );
      if (method === TASKS_LIST && tasks.list === undefined)
        return Promise.reject(
          new MethodNotFoundError(
            'the host connected to mcp-warden did not declare tasks.list (it lists no tasks)',
          ),
        );
      return this.peer.requestOutcome(method, params, options);
    }
    const capability = CAPABILITY_FOR.get(method);
    if (capability === undefined)
      return Promise.reject(new MethodNotFoundError(`Method not found: ${method}`));
    if (!this.can(capability))
      return Promise.reject(
        new MethodNotFoundError(
          `the host connected to mcp-warden did not declare the ${capability} capability`,
        ),
      );
    const refused =
      capability === 'elicitation'
        ? elicitationModeRefused(params, this.capabilities.elicitation)
        : undefined;
    if (refused !== undefined) return Promise.reject(new MethodNotFoundError(refused));
    return this.peer.requestOutcome(method, params, options);
  }

  sawList(list: HostList): void {
    this.listed.add(list);
  }

  hasSeen(list: HostList): boolean {
    return this.listed.has(list);
  }

  notify(method: string, params?: Params): void {
    this.peer.notify(method, params);
  }
}
