import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { NamedCatalog } from '../catalog/namedCatalog.js';
import type { UnknownToolError } from '../errors.js';
import type { HostSession } from '../host/hostSession.js';
import type { Principal } from '../principal.js';
import type { Params } from '../protocol/jsonRpc.js';

/**
 * What one host connection sees of the merged catalogue, when that is not simply all of it
 * (the catalogue feature's search mode, per-client profiles, a host's name-length budget). The
 * router asks it for the `tools/list` answer and about every `tools/call` before looking the
 * name up, so a tool the view leaves out is neither listed nor callable on this connection; and
 * for the part of the prompts and resources the connection may see, in their lists and when one
 * is asked for by name or URI.
 */
export interface ToolView {
  /** The `tools/list` answer (`{"tools":[...]}`) this connection gets. */
  listJson(): string;
  /**
   * What a `tools/call` of `name` is on this connection (see ViewedCall). Asking changes nothing
   * (the router may ask again once the servers have listed); what an answer changes, its `after` does.
   */
  call(name: string, args: Params | undefined): ViewedCall;
  /** The prompts and resources this connection may see; undefined while it may see all of them. */
  scope(): ListScope | undefined;
  /**
   * What the host is told, in the initialize answer's instructions (and a modern host's
   * `server/discover`), about reaching the tools: empty when they are all listed.
   */
  instructions(): readonly string[];
}

/**
 * Which prompts and resources a connection may see, by the server that serves each and the name
 * or URI the host knows it by. What it leaves out is neither listed nor served: asked for, it is
 * answered exactly as a prompt or resource nobody serves.
 */
export interface ListScope {
  prompt(server: string, name: string): boolean;
  resource(server: string, uri: string): boolean;
  template(server: string, uriTemplate: string): boolean;
}

/**
 * - undefined: an ordinary call of `name`;
 * - `route`: a call of another tool (the call tool's target, or the catalogue's name behind a
 *   name shortened for the host), made exactly as a direct call of it is, through the pipeline;
 * - `answer`: answered by the gateway itself (the search tool), then `after` runs;
 * - `refuse`: an `isError` result with this text (a name the call tool cannot call);
 * - `unknown`: a name this connection does not have, answered as an unknown tool.
 */
export type ViewedCall =
  | undefined
  | { readonly route: string; readonly arguments: Params | undefined }
  | { readonly answer: Params; readonly after?: () => void }
  | { readonly refuse: string }
  | { readonly unknown: UnknownToolError };

/** What a view is made for: one host connection. */
export interface ToolViewContext {
  /** The catalogue the connection's lists are made from. */
  readonly tools: NamedCatalog<Tool>;
  /** The host as it is now (its `clientInfo` may arrive after the connection is made). */
  readonly host: () => HostSession;
  readonly principal: Principal;
  /** The profile the connection asked for by its listener path (`/mcp/<profile>`). */
  readonly profile?: string;
  /** Each request is a connection of its own (the stateless HTTP revision): nothing is kept between them. */
  readonly stateless: boolean;
  /** Tells this host its tool list changed. */
  readonly toolsChanged: () => void;
}
