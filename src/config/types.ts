/**
 * The validated, normalized, frozen configuration the rest of the gateway reads.
 * Produced only by `loadConfig` (src/config/load.ts); nothing else builds one except tests.
 * Durations are milliseconds; paths are absolute.
 */

/** How exposed tool names are formed and bounded (see docs/reference/how-it-behaves.md, "Tool names"). */
export interface NamingConfig {
  /** Between namespace and tool name. Default `__`. */
  readonly separator: string;
  /** Exposed names must match this (anchored) pattern. Default `^[A-Za-z0-9_-]{1,64}$`. */
  readonly pattern: string;
  /** Exposed names longer than this are shortened with a stable hash. Default 64. */
  readonly maxLength: number;
}

/** Restart policy for crashed or failed upstreams. */
export interface RestartConfig {
  /** First delay after a crash. Default 500 ms. */
  readonly initialDelayMs: number;
  /** Delays double up to this cap. Default 30 s. */
  readonly maxDelayMs: number;
  /** More than this many restarts within `windowMs` marks the upstream failed. Default 5. */
  readonly maxRestarts: number;
  /** Default 60 s. */
  readonly windowMs: number;
}

/**
 * Result repair: what the gateway does to tool results that a strict or a lenient
 * host would mishandle. Each repair can be turned off; see docs/reference/how-it-behaves.md, "Result repair".
 */
export interface RepairConfig {
  /** `structuredContent` without any text block: add one with its JSON. Default true. */
  readonly textForStructured: boolean;
  /**
   * `structuredContent` that fails the tool's `outputSchema`, or is not an object:
   * `error` strips it, keeps its data as text with a note and sets `isError` (the SDK's
   * `Client.callTool` accepts that); `strip` does the same without `isError`; `off` passes it.
   * Default `error`.
   */
  readonly invalidStructured: 'error' | 'strip' | 'off';
  /** The tool declares `outputSchema`, sends no `structuredContent`, and its text is JSON that validates: offer that as `structuredContent`. Default true. */
  readonly structuredFromText: boolean;
  /**
   * The tool declares `outputSchema` and no `structuredContent` could be had: `error` sets
   * `isError` with a note (so strict hosts accept it), `off` passes it. Default `error`.
   */
  readonly missingStructured: 'error' | 'off';
}

export interface LogConfig {
  /** Log level: error | warn | info | debug. Default info. */
  readonly level: 'error' | 'warn' | 'info' | 'debug';
  /** Absolute path of a log file; when absent, logs go to stderr only. */
  readonly file?: string;
}

export interface GatewayConfig {
  readonly naming: NamingConfig;
  /** How long the host's first tools/list waits for upstreams to connect. Default 10 s. */
  readonly startupTimeoutMs: number;
  /** Bound on one upstream's spawn + initialize handshake. Default 30 s. */
  readonly connectTimeoutMs: number;
  /** When servers start unless they say otherwise (`gateway.start`, see `ServerCommon.start`). Default eager. */
  readonly start?: StartMode;
  /** Default of every server's `idleTimeout` (`gateway.idleTimeout`); undefined: never stopped when idle. */
  readonly idleTimeoutMs?: number;
  /**
   * Default per-call idle timeout (`gateway.timeout`; overridden per server and per tool).
   * Progress from the upstream restarts it. Default 5 min.
   */
  readonly callTimeoutMs: number;
  /** Hard limit of one call however much progress arrives (`gateway.maxTimeout`). Default 30 min. */
  readonly maxCallTimeoutMs: number;
  /** Gateway-wide repair settings; each server has its merged copy in `ServerConfig.repair`. */
  readonly repair: RepairConfig;
  /**
   * Check each tool call's arguments against the tool's `inputSchema` before the policy sees
   * them (`gateway.validateArguments`); each server may override it. Default true.
   */
  readonly validateArguments: boolean;
  /**
   * Whether edits of the config file (and of the servers' env files) are applied while serving
   * (`gateway.reload`). Read from the config in force when an edit arrives, so an edit that sets
   * it is not itself applied once it is false. Default true.
   */
  readonly reload: boolean;
  readonly restart: RestartConfig;
  readonly log: LogConfig;
  /**
   * Bound on one JSON-RPC message read from an upstream or the host (`gateway.maxMessageSize`):
   * a stdio line, an HTTP response body or one SSE event. A larger answer fails that call (or
   * restarts a stdio upstream when the call cannot be told) instead of breaking the connection.
   * Default 32 MiB.
   */
  readonly maxMessageBytes: number;
  /** `gateway.sandbox`: the sandbox of every stdio server that does not say otherwise. */
  readonly sandbox?: SandboxConfig;
}

/**
 * What a stdio server's process may read, write and reach (`sandbox:`). Besides these grants it
 * may always read the system folders and its own program and package, and write a private temp
 * folder; nothing else of the home folder is readable.
 */
export interface SandboxConfig {
  /**
   * `sandbox: auto` (or `auto: true`): also grant what the config and the policies already say
   * the server may touch, derived when it starts (see features/sandbox/grants.ts).
   */
  readonly auto: boolean;
  readonly filesystem: {
    /** Absolute folders it may read. */
    readonly read: readonly string[];
    /** Absolute folders it may read and write. */
    readonly write: readonly string[];
  };
  /** `false`: no network at all. `allow`: only these domains, through the filtering proxy. */
  readonly network: false | { readonly allow: readonly string[] };
  /** The most the managed settings let users grant; grants beyond it are dropped, and said so. */
  readonly limits?: SandboxLimits;
}

/** The managed settings' caps on a sandbox's grants; a list absent: not capped. */
export interface SandboxLimits {
  /** Folders under which reading may be granted (writing folders count too). */
  readonly read?: readonly string[];
  /** Folders under which writing may be granted. */
  readonly write?: readonly string[];
  /** Domains (and `*.` patterns) that may be allowed. */
  readonly network?: readonly string[];
  /** Where the managed file says so, for messages. */
  readonly source: string;
}

export interface ToolFilter {
  /** Anchored globs on the upstream's own tool name; empty means all. */
  readonly include: readonly string[];
  /** Anchored globs; applied after include. */
  readonly exclude: readonly string[];
  /** Per-tool timeout overrides, glob on the upstream tool name → ms. First match wins (config order). */
  readonly timeouts: readonly { readonly glob: string; readonly timeoutMs: number }[];
}

/** When a server's process starts: with the gateway, or on the first request that needs it. */
export type StartMode = 'eager' | 'lazy';

interface ServerCommon {
  /** The key under `servers:` / `mcpServers:`. */
  readonly name: string;
  /** Prefix of exposed names; `null` when the config says `namespace: false`. Default: the server name. */
  readonly namespace: string | null;
  /** Per-call idle timeout for this server's tools, when set; else the gateway default. */
  readonly timeoutMs?: number;
  /** Hard per-call limit for this server (`maxTimeout`), when set; else the gateway's. */
  readonly maxTimeoutMs?: number;
  /**
   * How long this server may take to start, spawn to first listing (`startupTimeout`): the
   * commands wait this long for it, and when it is longer than `gateway.startupTimeout` its
   * handshake's requests get at least this long. Default
   * 60 s for a package launcher (`npx`, `uvx`, ...: a first start installs packages), else
   * `gateway.startupTimeout`.
   */
  readonly startupTimeoutMs: number;
  /** The gateway's repair settings with this server's `repair:` overrides applied. */
  readonly repair: RepairConfig;
  /** This server's `guardrails:` overrides of the `guardrails:` section; absent: none. */
  readonly guardrails?: ServerGuardrails;
  /**
   * Whether calls to this server's tools are refused when their arguments do not match the
   * tool's `inputSchema` (strictly: no coercion, no defaults). The server's `validateArguments`,
   * else `gateway.validateArguments`.
   */
  readonly validateArguments: boolean;
  /** Calls in flight at once to this upstream; further calls queue. Default 16. */
  readonly maxConcurrency: number;
  /** Calls allowed to wait in the queue; beyond that calls are rejected. Default 256. */
  readonly maxQueue: number;
  readonly tools: ToolFilter;
  readonly disabled: boolean;
  /**
   * `eager` (default): started with the gateway. `lazy`: listed from its last listing (kept
   * beside the pins) and started on the first request that needs it; one never listed before is
   * started with the gateway once, to be listed.
   */
  readonly start?: StartMode;
  /**
   * The process is stopped once no request has been in flight this long, and started again on
   * the next request that needs it; resource subscriptions and running tasks keep it awake.
   * Undefined: it runs until the gateway stops.
   */
  readonly idleTimeoutMs?: number;
  /** Whether this server's tool annotations may be believed. Default false. */
  readonly trusted: boolean;
  /** The flow labels every tool and resource of this server carries (`labels:`); absent: none. */
  readonly labels?: readonly FlowLabel[];
  /**
   * With an HTTP listener, whether one process of this stdio server serves every principal
   * (`shared: true`) instead of one process per principal. Default false.
   */
  readonly shared: boolean;
  /** What this server may ask of the host: sampling, elicitation, roots. */
  readonly clientRequests: ClientRequestsConfig;
  /**
   * What the host is told of this server's `instructions` (its initialize answer's guidance for
   * the model): true passes them on, false leaves them out, a string replaces them.
   */
  readonly instructions: boolean | string;
  /** Where in the config file this server was declared, for messages. */
  readonly source: { readonly file: string; readonly line: number };
  /**
   * Why this server cannot be started, when its entry has problems (an unset `${VAR}`, an
   * unsupported `type`, an unreadable `envFile`, ...) and the config was loaded with
   * `badServers: 'mark-failed'`: the gateway serves the others and reports this one failed with
   * this reason, never starting it. The other settings of such an entry are best effort.
   */
  readonly failedAtLoad?: string;
  /**
   * Why the managed settings do not let this server start (the rule and where it is written):
   * never started, listed as blocked, audited as `server_blocked`.
   */
  readonly blockedByManaged?: string;
  /**
   * Why this server's process cannot start for the principal its entry was resolved for (a claim
   * its `${principal.claims.NAME}` needs is missing or unsafe): never started, reported failed.
   * Set only on an entry resolved for one principal, never by loading.
   */
  readonly cannotStart?: string;
}

/**
 * The requests a server may make of the host. Each defaults to allowed, as the host decides.
 * `false` refuses the request (and the gateway does not declare that client capability to the
 * server, so well-behaved servers never ask). `roots` may instead be a list of folders
 * (absolute paths): the server is answered with those as `file://` URIs and never sees the
 * host's roots, nor their changes.
 */
export interface ClientRequestsConfig {
  readonly sampling: boolean;
  readonly elicitation: boolean;
  readonly roots: boolean | readonly string[];
}

export interface StdioServerConfig extends ServerCommon {
  readonly transport: 'stdio';
  readonly command: string;
  readonly args: readonly string[];
  /**
   * Extra environment for the child, on top of the minimal default environment: the variables
   * of the server's `envFile`, if any, overlaid with those written under `env`.
   */
  readonly env: Readonly<Record<string, string>>;
  /** Absolute path of the `envFile` the entry names, if any: watched with the config file. */
  readonly envFile?: string;
  /**
   * Absolute working directory; relative values in the file are resolved against the config
   * file's folder. Default: the workspace folder (the config file's folder, or the one around
   * it for a file in `.vscode/` or `.cursor/`).
   */
  readonly cwd: string;
  /**
   * The sandbox its process runs in: its own `sandbox:`, else `gateway.sandbox`; undefined: none.
   * A platform that cannot sandbox never starts it unsandboxed: it fails to start instead.
   */
  readonly sandbox?: SandboxConfig;
  /**
   * The strings of `args`, `env` and `cwd` that name the principal (`${principal.id}`,
   * `${principal.home}`, `${principal.claims.NAME}`), as parts: they are filled in when a
   * principal's own process starts. The plain `args`, `env` and `cwd` show them as written.
   * Present only on a server that runs one process per principal; a per-principal server whose
   * entry gives no `cwd` gets `${principal.home}` here.
   */
  readonly perPrincipal?: PrincipalTemplates;
  /**
   * With a store and a listener, whether one principal's requests to their own process of this
   * server run one at a time over all replicas (`serial`, holding a lease in the store) or on
   * each replica's copy at once (`parallel`). Absent: `serial`. Never set with `shared: true`.
   */
  readonly acrossReplicas?: AcrossReplicas;
  /**
   * The principal's private folder, made (mode 0700) before the process starts, when the entry
   * resolved for one principal uses it. Set only on such an entry, never by loading.
   */
  readonly principalHome?: string;
}

/** See `StdioServerConfig.acrossReplicas`. */
export type AcrossReplicas = 'serial' | 'parallel';

/**
 * One string that names the principal: literal text and the principal's values, in order. A value
 * part is `id`, `home` or `claims.NAME`.
 */
export type PrincipalTemplate = readonly (string | { readonly principal: string })[];

/** Which strings of a stdio entry name the principal (see `StdioServerConfig.perPrincipal`). */
export interface PrincipalTemplates {
  /** By index into `args`. */
  readonly args: Readonly<Record<number, PrincipalTemplate>>;
  /** By variable name. */
  readonly env: Readonly<Record<string, PrincipalTemplate>>;
  readonly cwd?: PrincipalTemplate;
}

export interface HttpServerConfig extends ServerCommon {
  readonly transport: 'http';
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /**
   * How the gateway identifies itself to the server's authorization server when the server asks
   * for an OAuth sign-in. Absent: a Client ID Metadata Document or Dynamic Client Registration,
   * whichever that authorization server offers.
   */
  readonly oauth?: OAuthClientConfig;
}

/** `servers.<name>.oauth`: the OAuth client identity an HTTP server entry names. */
export interface OAuthClientConfig {
  /** A client registered ahead of time; used before any other kind of client identity. */
  readonly clientId?: string;
  /** Its secret, for a confidential client. */
  readonly clientSecret?: string;
  /** Scopes to ask for instead of those the server's challenge or metadata names. */
  readonly scopes?: readonly string[];
  /** An https URL of this client's metadata document, used as its client ID where supported. */
  readonly clientMetadataUrl?: string;
  /**
   * Token exchange (RFC 8693): behind the HTTP listener, each principal's own bearer token is
   * exchanged at the identity provider for one meant for this server, instead of the principal
   * signing in to it. Absent: each principal signs in interactively.
   */
  readonly tokenExchange?: TokenExchangeConfig;
}

/** `servers.<name>.oauth.tokenExchange`: how the gateway exchanges a principal's token for this server. */
export interface TokenExchangeConfig {
  /**
   * Where the exchange is made. Absent: the `token_endpoint` of the authorization server the
   * server's protected resource metadata names (RFC 9728, then RFC 8414 / OpenID discovery).
   */
  readonly tokenEndpoint?: string;
  /** The gateway's client at the identity provider, allowed the token-exchange grant. */
  readonly clientId: string;
  /** Its secret (a confidential client); absent: the client id is sent alone, as a public client's. */
  readonly clientSecret?: string;
  /** How the secret is sent: HTTP Basic (`client_secret_basic`, the default) or in the form (`client_secret_post`). */
  readonly clientAuth: 'basic' | 'post';
  /** The `audience` parameter: the logical name the identity provider knows the server by. */
  readonly audience?: string;
  /** The `resource` parameter (RFC 8707): the server's URL unless set; `false` sends none. */
  readonly resource: string | false;
  /** Scopes asked for on the exchanged token; absent: the identity provider's default. */
  readonly scopes?: readonly string[];
  /**
   * What happens when the exchange is refused for a principal (the identity provider says no, or
   * the principal has no token to exchange, as on stdio): `error` (the default), the call fails
   * naming the server and the reason; `signIn`, the principal signs in to the server as without
   * token exchange.
   */
  readonly fallback: 'error' | 'signIn';
}

export type ServerConfig = StdioServerConfig | HttpServerConfig;

/**
 * What a server's results (or a tool's, a resource's) bring into a host session, for flow control:
 * `untrusted`: they may carry instructions from outside (web pages, mail, issues); `private`:
 * they hold data the user would not publish; `egress`: the tool can send data out or change the
 * world outside.
 */
export type FlowLabel = 'untrusted' | 'private' | 'egress';

export const FLOW_LABELS: readonly FlowLabel[] = Object.freeze(['untrusted', 'private', 'egress']);

/** `flow:`, what happens to a call that would complete the lethal trifecta in a session. */
export interface FlowConfig {
  /**
   * `confirm` (default): the user is asked, naming the calls that made it risky; `deny`: refused
   * with a result that says why; `audit`: only recorded.
   */
  readonly trifecta: 'confirm' | 'deny' | 'audit';
}

/** One way of asking a human to confirm a call, tried in the configured order. */
export type ConfirmationMethod = 'elicitation' | 'command';

export interface ConfirmationConfig {
  /**
   * Ways to ask, in order; the first one available is used. `elicitation`: the host, through MCP
   * elicitation, when it declared the capability. `command`: the `command` hook below. When none
   * is available the call is denied (fail closed). Default `[elicitation, command]`.
   */
  readonly methods: readonly ConfirmationMethod[];
  /** No answer within this long means no. Default 30 s, under the 60 s many hosts give a request. */
  readonly timeoutMs: number;
  /** Offer "remember for this session" (per tool) when asking through the host. Default true. */
  readonly offerRemember: boolean;
  /**
   * A program run with a JSON description of the call on stdin: exit 0 means yes, anything else
   * no. `args` and `env` as for servers; relative paths resolve against the config's folder.
   */
  readonly command?: {
    readonly command: string;
    readonly args: readonly string[];
    readonly env: Readonly<Record<string, string>>;
    readonly cwd: string;
  };
}

/** The audit trail. Absent when the config has no `audit:` section. */
export interface AuditConfig {
  /**
   * Absolute path of the JSON-lines file; absent (`file: false`) when the records go to the
   * network sinks only, each through its spool.
   */
  readonly file?: string;
  /** The folder of the sinks' spools (`spool`): default `<file>.spool`; required without a file. */
  readonly spoolDir: string;
  /** Rotate when the file would exceed this many bytes (`maxSize`). Default 50 MiB. */
  readonly maxBytes: number;
  /** Rotated files kept (`file.1` … `file.N`). Default 5. */
  readonly maxFiles: number;
  /** When the file cannot be written: `block` denies calls with a clear error, `continue` serves and warns. Default `block`. */
  readonly onFailure: 'block' | 'continue';
  /** fsync after every record: survives power loss, costs ~150 µs a record. Default false. */
  readonly fsync: boolean;
  /** Also record (redacted) `structuredContent` of results. Default false. */
  readonly logResults: boolean;
  /** Extra key names and value patterns (regular expressions) to redact, on top of the built-in ones. */
  readonly redact: { readonly keys: readonly string[]; readonly patterns: readonly string[] };
  /** Signed checkpoints (`checkpoints:`); absent: none are written. */
  readonly checkpoints?: AuditCheckpointsConfig;
  /** Network sinks that get every record as well as the file, or instead of it (`sinks:`); absent: none. */
  readonly sinks?: readonly AuditSinkConfig[];
}

/** `audit.checkpoints`: sign the chain head at an interval and at shutdown. */
export interface AuditCheckpointsConfig {
  /** Absolute path of the Ed25519 private key (PEM) from `mcp-warden audit keygen`. */
  readonly key: string;
  /** Between checkpoints while records keep coming. Default 5 minutes. */
  readonly intervalMs: number;
}

/** What every audit sink has. */
interface AuditSinkCommon {
  /** Names the sink in messages and its spool folder (`<spoolDir>/<name>`). */
  readonly name: string;
  /** Under `onFailure: block`, calls are refused while this sink cannot take records. Default false. */
  readonly required: boolean;
  /** `warden`: the record line as in the file (default); `ocsf`: an OCSF API Activity (6003) event. */
  readonly format: 'warden' | 'ocsf';
  /** Bytes of records that may wait on disk for the sink. Default 64 MiB. */
  readonly spoolMaxBytes: number;
}

/** RFC 5424 syslog over TCP (or TLS), octet-counted frames. */
export interface SyslogSinkConfig extends AuditSinkCommon {
  readonly type: 'syslog';
  readonly host: string;
  readonly port: number;
  readonly tls: boolean;
  /** Absolute path of a PEM file of CAs to trust (TLS); absent: the system's. */
  readonly ca?: string;
  /** 0-23; default 13 (log audit). */
  readonly facility: number;
  /** Default `mcp-warden`. */
  readonly appName: string;
}

/** OTLP logs over HTTP (JSON). */
export interface OtlpSinkConfig extends AuditSinkCommon {
  readonly type: 'otlp';
  /** The full URL logs are posted to (`http://collector:4318/v1/logs`). */
  readonly endpoint: string;
  readonly headers: Readonly<Record<string, string>>;
}

export type AuditSinkConfig = SyslogSinkConfig | OtlpSinkConfig;

/**
 * Pinning of tool definitions (see docs/reference/how-it-behaves.md, "Pinning tool definitions"). Absent when the config has
 * no `pins:` section: nothing is pinned or checked, and calls take no extra step.
 */
export interface PinsConfig {
  /** Absolute path of the pins file (JSON); created on first use. */
  readonly file: string;
  /**
   * A tool whose definition differs from its pin: `block` leaves it out of `tools/list` and
   * refuses its calls until the change is accepted; `warn` serves it and warns. Default `block`.
   */
  readonly onChange: 'block' | 'warn';
  /**
   * A tool without a pin: `pin` pins it on first sight (trust on first use); `block` treats it
   * like a changed tool under `block` until it is accepted. Default `pin`.
   */
  readonly onNew: 'pin' | 'block';
}

/**
 * OpenTelemetry export (see README, "Telemetry"). Absent when the config has no `telemetry:`
 * section: nothing is exported and the SDK is never loaded. Where data goes is read from the
 * standard `OTEL_*` environment variables, not from here.
 */
export interface TelemetryConfig {
  /** A SERVER and a CLIENT span per routed request, trace context carried in `_meta`. Default false. */
  readonly traces: boolean;
  /** Durations, decisions, repairs, restarts, queue depth, audit-write latency. Default false. */
  readonly metrics: boolean;
  /** Tool arguments and results (redacted) on spans. Default false: they may hold secrets. */
  readonly content: boolean;
  /** How often metrics are exported (`metricsInterval`). Default 60 s. */
  readonly metricsIntervalMs: number;
}

/**
 * What result guardrails do with what a rule finds in a result on its way to the host:
 * `redact` replaces each match with a marker naming its category, `block` answers an error in
 * place of the result (naming what was found and where, never the value), `audit` only records
 * it, `off` ignores it.
 */
export type GuardrailAction = 'redact' | 'block' | 'audit' | 'off';

/**
 * Guardrail settings at one level: the `guardrails:` section, a server's `guardrails:`, or a
 * tool glob under it. At a level, a category's own setting beats its group's (`secrets`, `pii`);
 * a level that says nothing about a category leaves it to the level around it.
 */
export interface GuardrailSettings {
  /** Every secret category (built-in rules and the user's patterns). */
  readonly secrets?: GuardrailAction;
  /** Every personal-data category (email, phone, card-number, iban). */
  readonly pii?: GuardrailAction;
  /** By category name. */
  readonly categories: Readonly<Record<string, GuardrailAction>>;
}

/** A server's `guardrails:`: its settings, and per tool glob (first match in file order wins). */
export interface ServerGuardrails extends GuardrailSettings {
  readonly tools: readonly { readonly glob: string; readonly settings: GuardrailSettings }[];
}

/**
 * `guardrails:`, scanning results for secrets and personal data before the host sees them
 * (see docs/guides/result-guardrails.md). Absent: results are not scanned.
 */
export interface GuardrailsConfig extends GuardrailSettings {
  /** Default `redact`. */
  readonly secrets: GuardrailAction;
  /** Default `audit`. */
  readonly pii: GuardrailAction;
  /** The user's own secret patterns: each a category of its own, named `name`. */
  readonly patterns: readonly { readonly name: string; readonly regex: string; readonly flags: string }[];
}

export interface WardenConfig {
  /** Absolute path of the file this came from. */
  readonly file: string;
  readonly gateway: GatewayConfig;
  /** Policy files, absolute, in the order listed (`policies:`); the first matching rule across them decides. */
  readonly policies: readonly string[];
  readonly confirmation: ConfirmationConfig;
  /** Flow control (`flow:`); absent: its defaults (see config/defaults.ts). */
  readonly flow?: FlowConfig;
  readonly audit?: AuditConfig;
  readonly pins?: PinsConfig;
  readonly guardrails?: GuardrailsConfig;
  readonly telemetry?: TelemetryConfig;
  /** The HTTP listener (team mode); absent: stdio only. See config/team.ts. */
  readonly listen?: ListenConfig;
  /** Bearer-token authentication of HTTP hosts; absent: none (loopback listeners only). */
  readonly auth?: AuthConfig;
  /** How the tool list is served to hosts (`catalog:`); the loader fills in its defaults. Absent: all tools listed. */
  readonly catalog?: CatalogConfig;
  /** Per-client subsets of the catalogue (`profiles:`), in file order. Absent or empty: none. */
  readonly profiles?: readonly ProfileConfig[];
  /** Token buckets on calls (`rateLimits:`), in the order written; absent: none. */
  readonly rateLimits?: readonly RateLimitRule[];
  /** The store replicas share (`store:`); absent: state is kept in each process's memory. */
  readonly store?: StoreConfig;
  /** In the order the file lists them; this order decides name collisions. */
  readonly servers: readonly ServerConfig[];
  /**
   * The organisation's managed settings this config was loaded with, when the machine has them
   * (see config/managed.ts). Their policy files come first in `policies`.
   */
  readonly managed?: { readonly file: string; readonly policies: readonly string[] };
}

/** One `rateLimits:` rule: which requests it bounds, whose bucket, and the bucket's size. */
export interface RateLimitRule {
  /** Its place in `rateLimits` (from 0): how records and messages name it. */
  readonly index: number;
  /** Glob over server names; absent: every server. */
  readonly server?: string;
  /** Glob over the tool's own name; absent: every request to the matched servers. */
  readonly tool?: string;
  readonly per: 'principal' | 'everyone';
  /** The rate as written (`30/minute`), for messages. */
  readonly rate: string;
  /** Milliseconds for one token to come back. */
  readonly refillMs: number;
  /** Tokens the bucket holds at most. */
  readonly burst: number;
}

/** `store:`, a Redis server (or a compatible one) that replicas share. */
export interface StoreConfig {
  /** `redis://` or `rediss://` (TLS), with the password already interpolated. */
  readonly url: string;
  /** The URL without its password, for messages and logs. */
  readonly shown: string;
  /** One store operation fails after this long. Default 2 s. */
  readonly timeoutMs: number;
  /** Every key starts with this and a colon. Default `mcp-warden`. */
  readonly prefix: string;
}

/** `listen:`, the Streamable HTTP listener at /mcp. */
export interface ListenConfig {
  /** The address to bind; port 0 picks a free one. */
  readonly host: string;
  readonly port: number;
  /** Also serve a host on stdin/stdout. Default false. */
  readonly stdio: boolean;
  /** Host header values accepted besides the listener's own address and localhost. */
  readonly allowedHosts: readonly string[];
  /** Origin header values accepted besides the listener's own. */
  readonly allowedOrigins: readonly string[];
  /** Open sessions at most. Default 100. */
  readonly maxSessions: number;
  /** A session without requests for this long is closed. Default 30 min. */
  readonly sessionIdleMs: number;
  /** Secret shared by replicas that seals session ids; absent: a random key per process. */
  readonly sessionKey?: string;
  /** What each principal may use (`listen.perPrincipal`). */
  readonly perPrincipal: PerPrincipalConfig;
}

/** `listen.perPrincipal`: each principal's own processes and call bounds. */
export interface PerPrincipalConfig {
  /** A principal's own server processes stop after this long unused. Default 10 min. */
  readonly idleMs: number;
  /** Per-principal server processes running at once, all principals together. Default 64. */
  readonly maxProcesses: number;
  /**
   * HTTP sessions one principal may hold open at once, so that one user cannot take every slot
   * of `listen.maxSessions`. Default a quarter of maxSessions (at least 1).
   */
  readonly maxSessions: number;
  /** Requests one principal may have in flight at once; absent: no bound. */
  readonly maxConcurrency?: number;
  /** Requests one principal may make in any 60 s; absent: no bound. */
  readonly ratePerMinute?: number;
}

/** `auth:`, mcp-warden as an OAuth 2.1 resource server. */
export interface AuthConfig {
  readonly issuer: string;
  readonly audience: string;
  /** Where the signing keys are; absent: from the issuer's metadata. */
  readonly jwksUri?: string;
  readonly requiredScopes: readonly string[];
  /** Claims kept on the principal besides sub, iss and client_id. */
  readonly claims: readonly string[];
  /** Tolerance for exp and nbf. Default 30 s. */
  readonly clockSkewMs: number;
  /** An unknown key id refetches the JWKS at most once per this long. Default 30 s. */
  readonly jwksCooldownMs: number;
  /** `auth.frontDoor`: hosts sign in through the gateway, which signs in at `issuer` for them. */
  readonly frontDoor?: FrontDoorConfig;
}

/** `auth.frontDoor`: the gateway's own authorization server in front of the identity provider. */
export interface FrontDoorConfig {
  /** The one client registered at the identity provider (`auth.issuer`) for this gateway. */
  readonly clientId: string;
  /** Its secret (a confidential client); absent: a public client. */
  readonly clientSecret?: string;
  /** Scopes asked of the identity provider; includes `openid`. */
  readonly scopes: readonly string[];
  /** Where hosts and browsers reach the gateway (an origin): its tokens' issuer. */
  readonly baseUrl: string;
  /** The private key tokens are signed with (JWK JSON or PKCS#8 PEM); absent: one kept in the state folder. */
  readonly signingKey?: string;
  readonly accessTokenMs: number;
  readonly refreshTokenMs: number;
}

/** How the host's tool list is served: every tool, or a search tool and a call tool. */
export type CatalogMode = 'all' | 'search' | 'auto';

/** `catalog:`. See docs/guides/large-catalogues.md. */
export interface CatalogConfig {
  /**
   * `all`: every tool is listed. `search`: the list holds a search tool, a call tool and the
   * tools of `alwaysLoad`. `auto` (default): `all` while the catalogue is within `auto`'s
   * bounds, `search` above them, and `all` for a host that searches its tools itself.
   */
  readonly mode: CatalogMode;
  /** Globs on exposed tool names: always listed, and marked for Claude Code to keep loaded. */
  readonly alwaysLoad: readonly string[];
  /** Where `auto` switches to `search`: more tools than `maxTools`, or more estimated tokens than `maxTokens`. */
  readonly auto: { readonly maxTools: number; readonly maxTokens: number };
  /**
   * The name the host knows mcp-warden by (its key in the host's config). Claude Code names a
   * tool `mcp__<this>__<tool>` and refuses names over 64 characters, so longer tool names are
   * shortened for it. Default `mcp-warden`.
   */
  readonly hostServerName: string;
}

/** One entry of `profiles:`: a subset of the catalogue, for the hosts it selects. */
export interface ProfileConfig {
  /** Its key under `profiles:`; also its listener path `/mcp/<name>`. */
  readonly name: string;
  /** Globs on the host's `clientInfo.name`: hosts that get this profile. */
  readonly clients: readonly string[];
  /** Globs on the principal's subject (token `sub` or OS user): principals that get this profile. */
  readonly principals: readonly string[];
  /** Globs on server names: only their tools, prompts and resources (empty: every server). */
  readonly servers: readonly string[];
  /** Globs on exposed tool names: only these tools (empty: every tool of the servers). */
  readonly tools: readonly string[];
  /** Globs on exposed prompt names: only these prompts (empty: every prompt of the servers). */
  readonly prompts: readonly string[];
  /**
   * Globs on resource URIs, a template counting by its `uriTemplate`: only these (empty: every
   * resource and template of the servers).
   */
  readonly resources: readonly string[];
  /** This profile's own `catalog.mode`, when it has one. */
  readonly mode?: CatalogMode;
}
