import { UpstreamFailedError, UpstreamRpcError } from '../errors.js';
import type { Params } from '../protocol/jsonRpc.js';
import type { OutgoingOptions, RpcPeer } from '../rpc/peer.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '../protocol/versions.js';
import { META, MODERN_VERSIONS, UNSUPPORTED_PROTOCOL_VERSION, withEnvelope } from '../protocol/envelope.js';

/**
 * Which protocol era an upstream speaks. Learnt by probing, as the stdio binding says a dual-era
 * client does: `server/discover` first, carrying the modern envelope; an answer (or a modern
 * error naming a version we share) makes it modern; any other error, or silence within the
 * probe's bound, or a success that is no discover result, makes it legacy, and the client falls
 * back to `initialize`.
 */
export type UpstreamEra = 'legacy' | 'modern';

/** How long the probe waits for an answer: some legacy servers never answer an unknown request. */
export const PROBE_MS = 2000;

/** Error codes the stateless revision defines; receiving one means the server is modern. */
const MODERN_ERROR_CODES: ReadonlySet<number> = new Set([-32020, -32021, UNSUPPORTED_PROTOCOL_VERSION]);

/** What a modern server said of itself in its `server/discover` answer. */
export interface Discovered {
  readonly protocolVersion: string;
  readonly capabilities: Params;
  readonly instructions: string | undefined;
  readonly serverInfo: { readonly name: string; readonly version: string } | undefined;
}

/**
 * Sends the probe. Resolves with what the server said when it is modern, undefined when it is
 * legacy; rejects when it is modern but shares no version with the gateway (naming its
 * versions), or when the connection itself failed.
 */
export async function probeModern(options: {
  readonly session: RpcPeer;
  readonly server: string;
  readonly meta: Params;
  readonly timeoutMs: number;
}): Promise<Discovered | undefined> {
  const { session, server, meta, timeoutMs } = options;
  let silent = false;
  const deadline: OutgoingOptions = {
    deadlineMs: timeoutMs,
    deadlineError: () => {
      silent = true;
      return new Error('no answer to server/discover');
    },
  };
  let answer: Record<string, unknown>;
  try {
    answer = await session.request('server/discover', withEnvelope(undefined, meta), deadline);
  } catch (error) {
    if (silent) return undefined;
    if (!(error instanceof UpstreamRpcError) || !MODERN_ERROR_CODES.has(error.rpcCode)) {
      if (error instanceof UpstreamRpcError) return undefined;
      throw error;
    }
    const supported = (error.data as { supported?: unknown } | undefined)?.supported;
    const versions = Array.isArray(supported)
      ? supported.filter((v): v is string => typeof v === 'string')
      : [];
    // A dual-era server that declines our modern version but lists a legacy one can still be
    // initialized; a modern-only one we share nothing with is a clear failure.
    if (versions.some((v) => SUPPORTED_PROTOCOL_VERSIONS.includes(v))) return undefined;
    throw new UpstreamFailedError(
      server,
      `speaks protocol versions ${versions.join(', ') || '(none named)'}, none of which mcp-warden speaks (it speaks ${[...MODERN_VERSIONS, ...SUPPORTED_PROTOCOL_VERSIONS].join(', ')})`,
    );
  }
  // Some legacy servers answer any method they do not know with an empty success: an answer that
  // is not a discover result (no list of versions) says nothing of the modern era, so the server
  // is initialized like any legacy one.
  if (!Array.isArray(answer.supportedVersions)) return undefined;
  const versions = answer.supportedVersions as unknown[];
  const shared = MODERN_VERSIONS.find((v) => versions.includes(v));
  if (shared === undefined) {
    if (versions.some((v) => typeof v === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(v)))
      return undefined;
    throw new UpstreamFailedError(
      server,
      `answered server/discover with versions ${JSON.stringify(versions).slice(0, 200)}, none of which mcp-warden speaks`,
    );
  }
  const capabilities = answer.capabilities;
  const info = (answer._meta as Params | undefined)?.[META.serverInfo] as Params | undefined;
  return {
    protocolVersion: shared,
    capabilities: typeof capabilities === 'object' && capabilities !== null ? (capabilities as Params) : {},
    instructions: typeof answer.instructions === 'string' ? answer.instructions : undefined,
    serverInfo: serverInfoOf(info),
  };
}

/** The name and version a server gave of itself (initialize or server/discover), if it named itself. */
export function serverInfoOf(
  info: Params | undefined,
): { readonly name: string; readonly version: string } | undefined {
  if (typeof info?.name !== 'string') return undefined;
  return { name: info.name, version: typeof info.version === 'string' ? info.version : '' };
}
