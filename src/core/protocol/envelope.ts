import { ProtocolError } from '../errors.js';
import { RpcErrorCode, type Params } from './jsonRpc.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from './versions.js';

/**
 * The per-request envelope of the stateless protocol revision (2026-07-28): every request
 * carries its protocol version, the client's capabilities and, optionally, its identity and log
 * level in `params._meta`, instead of an `initialize` handshake fixing them for a connection.
 */

/** The stateless revisions the gateway speaks, newest first. */
export const MODERN_VERSIONS: readonly string[] = ['2026-07-28'];
export const MODERN_VERSION = MODERN_VERSIONS[0]!;
/** Every revision the gateway serves a host in, either era, newest first. */
export const ALL_VERSIONS: readonly string[] = [...MODERN_VERSIONS, ...SUPPORTED_PROTOCOL_VERSIONS];

/** The reserved `_meta` keys of the envelope and of results and notifications. */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
} as const;

/** The error code a request in a revision the receiver does not serve gets. */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** The log levels of MCP, least severe first; a request asks for its level and those after it. */
export const LOG_LEVELS: readonly string[] = [
  'debug',
  'info',
  'notice',
  'warning',
  'error',
  'critical',
  'alert',
  'emergency',
];

/** What one modern request says about its sender. */
export interface Envelope {
  readonly protocolVersion: string;
  readonly capabilities: Params;
  readonly clientInfo: { readonly name: string; readonly version: string } | undefined;
  /** The least severe log level the sender wants for this request; undefined: no log messages. */
  readonly logLevel: string | undefined;
}

/** How long a result may be cached, and by whom (the revision's caching hints). */
export interface CacheHint {
  readonly ttlMs: number;
  readonly cacheScope: 'public' | 'private';
}

/** The client identity the last envelope read named (immutable, so shared by every reader). */
let lastClientInfo: Envelope['clientInfo'];

/**
 * The envelope value the host's transport hands out again for every request that carries the
 * same text (see host/envelopeReuse.ts), frozen; what is read from it is worked out once.
 */
let shared: { readonly meta: Params; envelope?: Envelope; rest?: Params | undefined } | undefined;

/** Marks `meta` (deeply frozen) as the envelope value requests will share; returns it. */
export function shareEnvelopeMeta(meta: Params): Params {
  shared = { meta };
  return meta;
}

/** Whether a request's params carry the envelope (it names a protocol version in `_meta`). */
export function hasEnvelope(params: Params | undefined): boolean {
  const meta = params?._meta;
  return typeof meta === 'object' && meta !== null && Object.hasOwn(meta, META.protocolVersion);
}

/**
 * Reads and checks a request's envelope. A missing or malformed required field is -32602, as
 * the revision says; a version the gateway does not serve statelessly is -32022 naming the
 * versions it does.
 */
export function readEnvelope(method: string, params: Params | undefined): Envelope {
  const meta = params?._meta;
  const known = shared;
  if (known !== undefined && meta === known.meta) return (known.envelope ??= checkEnvelope(method, meta));
  return checkEnvelope(method, meta);
}

function checkEnvelope(method: string, meta: unknown): Envelope {
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta))
    throw malformed(method, `params._meta is missing (it must carry ${META.protocolVersion})`);
  const fields = meta as Params;
  const version = fields[META.protocolVersion];
  if (typeof version !== 'string')
    throw malformed(method, `_meta["${META.protocolVersion}"] must be a string`);
  if (version !== MODERN_VERSION && !MODERN_VERSIONS.includes(version)) throw unsupportedVersion(version);
  const capabilities = fields[META.clientCapabilities];
  if (typeof capabilities !== 'object' || capabilities === null || Array.isArray(capabilities))
    throw malformed(method, `_meta["${META.clientCapabilities}"] must be an object`);
  const info = fields[META.clientInfo];
  let clientInfo: Envelope['clientInfo'];
  if (info !== undefined) {
    const { name, version: v } = (info ?? {}) as Params;
    if (typeof info !== 'object' || info === null || typeof name !== 'string' || typeof v !== 'string')
      throw malformed(method, `_meta["${META.clientInfo}"] must be an object with a name and a version`);
    // A host sends the same identity with every request: the copy of it is made once, frozen
    // (the audit trail then writes its text once).
    const last = lastClientInfo;
    clientInfo =
      last?.name === name && last.version === v
        ? last
        : (lastClientInfo = Object.freeze({ name, version: v }));
  }
  const level = fields[META.logLevel];
  if (level !== undefined && (typeof level !== 'string' || !LOG_LEVELS.includes(level)))
    throw malformed(method, `_meta["${META.logLevel}"] must be one of ${LOG_LEVELS.join(', ')}`);
  return { protocolVersion: version, capabilities: capabilities as Params, clientInfo, logLevel: level };
}

/**
 * What a client whose version is refused can do instead: the per-request revisions are the
 * ones `server/discover` lists (and the only ones an error about an envelope lists, so the two
 * agree); the handshake revisions are served after an `initialize` without the envelope.
 */
const ELSEWHERE = ` per request (as server/discover lists); a client of ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')} sends initialize, without the per-request envelope, and is served in the session it opens`;

/** -32022 for a request in `requested`, listing what is served instead and how. */
export function unsupportedVersion(
  requested: string,
  supported: readonly string[] = MODERN_VERSIONS,
  advice: string = ELSEWHERE,
): ProtocolError {
  return new ProtocolError(
    UNSUPPORTED_PROTOCOL_VERSION,
    `Unsupported protocol version ${JSON.stringify(requested).slice(0, 100)}: mcp-warden serves ${supported.join(', ')}${advice}`,
    { supported: [...supported], requested },
  );
}

/** How the error about a malformed envelope begins (the HTTP binding answers it with 400). */
export const INVALID_ENVELOPE = 'Invalid request envelope';

function malformed(method: string, problem: string): ProtocolError {
  return new ProtocolError(
    RpcErrorCode.InvalidParams,
    `${INVALID_ENVELOPE} on ${method.slice(0, 100)}: ${problem}`,
  );
}

/** The envelope the gateway sends a modern upstream with each request. */
export function envelopeMeta(options: {
  readonly clientInfo: { readonly name: string; readonly version: string };
  readonly capabilities: Params;
  readonly logLevel?: string | undefined;
}): Params {
  const meta: Params = {
    [META.protocolVersion]: MODERN_VERSION,
    [META.clientCapabilities]: options.capabilities,
    [META.clientInfo]: options.clientInfo,
  };
  if (options.logLevel !== undefined) meta[META.logLevel] = options.logLevel;
  return meta;
}

/** `params` with `meta` merged into its `_meta` (the sender's own keys kept). */
export function withEnvelope(params: Params | undefined, meta: Params): Params {
  const own = params?._meta;
  const merged = typeof own === 'object' && own !== null ? { ...(own as Params), ...meta } : meta;
  return { ...params, _meta: merged };
}

/** The envelope's keys, which a legacy peer never sees. */
const ENVELOPE_KEYS: ReadonlySet<string> = new Set([
  META.protocolVersion,
  META.clientCapabilities,
  META.clientInfo,
  META.logLevel,
]);

/** `_meta` without the envelope's keys: what a legacy peer should see of a modern sender's meta. */
export function withoutEnvelope(meta: Params | undefined): Params | undefined {
  if (meta === undefined) return meta;
  const known = shared;
  if (known !== undefined && meta === known.meta) {
    if (!Object.hasOwn(known, 'rest')) {
      const rest = envelopeLeftOut(meta);
      known.rest = rest === undefined ? undefined : Object.freeze(rest);
    }
    return known.rest;
  }
  return envelopeLeftOut(meta);
}

function envelopeLeftOut(meta: Params): Params | undefined {
  if (!Object.hasOwn(meta, META.protocolVersion)) return meta;
  // A new object rather than `delete`: deleting keys leaves an object V8 handles slowly.
  let rest: Params | undefined;
  for (const key in meta) {
    if (!Object.hasOwn(meta, key) || ENVELOPE_KEYS.has(key)) continue;
    (rest ??= {})[key] = meta[key];
  }
  return rest;
}
