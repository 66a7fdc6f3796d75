/**
 * Every default of the configuration, in one place. `load.ts` fills gaps from here and
 * nowhere else. The JSON Schema repeats some of them as `default` annotations for editors;
 * a unit test keeps the two in agreement.
 */
import { deepFreeze } from '../lib/freeze.js';
import type {
  AuditConfig,
  ConfirmationConfig,
  FlowConfig,
  GatewayConfig,
  PinsConfig,
  TelemetryConfig,
} from './types.js';

export const DEFAULTS = deepFreeze({
  /** The whole `gateway:` section when the file omits it (no log file: logs go to stderr only). */
  gateway: {
    naming: {
      /** Between namespace and tool name: `fs__read_file`. */
      separator: '__',
      /** What Claude and most other hosts accept as a tool name. */
      pattern: '^[A-Za-z0-9_-]{1,64}$',
      /** Matches the pattern's upper bound, so hashed shortening keeps names acceptable. */
      maxLength: 64,
    },
    /** 10 s: long enough for `npx` to start a cached package, short enough not to stall the host. */
    startupTimeoutMs: 10_000,
    /** 30 s: a cold `npx -y` download can be slow. */
    connectTimeoutMs: 30_000,
    /** Servers start with the gateway unless a config says `lazy`. */
    start: 'eager' as const,
    /** 5 min: tools may do real work (builds, searches); per-server and per-tool values override it. */
    callTimeoutMs: 300_000,
    /**
     * 30 min: a hard bound on one call even while progress keeps arriving. A server's own
     * `maxTimeout` may raise or lower it. When `gateway.timeout` is not written, the idle default
     * above is cut to this if this is shorter (see `load.ts`), so idle never exceeds the limit.
     */
    maxCallTimeoutMs: 1_800_000,
    /** Every result repair on; a server's `repair:` section overrides these key by key. */
    repair: {
      /** Hosts that read only text still see structured results. */
      textForStructured: true,
      /** Invalid structured content is stripped, kept as text, and the result marked isError. */
      invalidStructured: 'error',
      /** JSON text that validates against the output schema is offered as structured content. */
      structuredFromText: true,
      /** A declared output schema with no structured content marks the result isError. */
      missingStructured: 'error',
    },
    /**
     * Arguments that do not match the tool's own inputSchema are refused before the policy judges
     * them: a string where a number is expected escapes a `minimum` rule, and a lenient server
     * would coerce it. A server's `validateArguments` overrides it.
     */
    validateArguments: true,
    /** An edit of the config file while serving is applied: what users of other gateways expect. */
    reload: true,
    restart: {
      /** 500 ms before the first restart after a crash. */
      initialDelayMs: 500,
      /** The doubling restart delay stops growing at 30 s. */
      maxDelayMs: 30_000,
      /** A sixth restart within the window marks the upstream failed. */
      maxRestarts: 5,
      /** Restarts are counted over 60 s. */
      windowMs: 60_000,
    },
    log: {
      /** `info`: lifecycle events without per-call noise. */
      level: 'info',
    },
    /** 32 MiB per JSON-RPC message from an upstream: room for large resources, a bound on memory. */
    maxMessageBytes: 32 * 1024 * 1024,
  } satisfies GatewayConfig,

  /** No policy files: every call is allowed, as before policies existed. */
  policies: [],

  /** The `confirmation:` section, key by key; `command` has no default (no hook). */
  confirmation: {
    /** Ask through the host when it can show a prompt, else through the command hook if configured. */
    methods: ['elicitation', 'command'],
    /** 30 s: under the 60 s many hosts allow a request, so our "no" arrives before their timeout. */
    timeoutMs: 30_000,
    /** A user who said yes once may say "for this session" rather than be asked again and again. */
    offerRemember: true,
  } satisfies ConfirmationConfig,

  /**
   * The `flow:` section. `confirm`: a session that has read untrusted content and private data
   * and is about to send data out is the one case where a human's look is worth the interruption;
   * denying outright would break legitimate work (read a page, read a file, write a summary to a
   * ticket), and only auditing would leave the exfiltration running.
   */
  flow: { trifecta: 'confirm' } satisfies FlowConfig,

  /** The `audit:` section's keys when it is present; `file` is required there and has no default. */
  audit: {
    /** 50 MiB a file before rotating: small enough to open, search and copy whole. */
    maxBytes: 50 * 1024 * 1024,
    /** Five rotated files kept: with the current one, about 300 MiB on disk at most. */
    maxFiles: 5,
    /** An audit trail that silently stops is worse than a refused call: fail closed. */
    onFailure: 'block',
    /** No fsync per record (~150 µs each): a record survives any exit of the process, just not a power cut. */
    fsync: false,
    /** Results are not recorded: they are large and may hold data the arguments did not. */
    logResults: false,
    /** Only the built-in secret keys and patterns. */
    redact: { keys: [], patterns: [] },
  } satisfies Omit<AuditConfig, 'file' | 'spoolDir'>,

  /** `audit.checkpoints` and `audit.sinks[]` keys with defaults. */
  auditShipping: {
    /** Five minutes: what can be cut from a trail unnoticed without an anchor, at most, while it runs. */
    checkpointIntervalMs: 5 * 60_000,
    /** 64 MiB of records waiting for a sink: hours of heavy use, small next to the trail itself. */
    spoolMaxBytes: 64 * 1024 * 1024,
    /** log audit (13), the facility RFC 5424 names for audit records. */
    facility: 13,
    appName: 'mcp-warden',
  },

  /** The `pins:` section's keys when it is present; `file` is required there and has no default. */
  pins: {
    /** A definition that changed after it was approved is an attack until a person says otherwise. */
    onChange: 'block',
    /** Trust on first use: a new server's tools work at once, and are held to what was first seen. */
    onNew: 'pin',
  } satisfies Omit<PinsConfig, 'file'>,

  /** The `telemetry:` section's keys when it is present: each signal is asked for by name. */
  telemetry: {
    traces: false,
    metrics: false,
    /** Arguments and results stay out of spans: a tracing backend is rarely cleared for secrets. */
    content: false,
    /** The OpenTelemetry default: a minute between exports. */
    metricsIntervalMs: 60_000,
  } satisfies TelemetryConfig,

  /** Per-server settings when the server's entry omits them. */
  server: {
    /** 16 calls in flight at once per upstream; further calls queue. */
    maxConcurrency: 16,
    /** 256 queued calls per upstream before new calls are rejected. */
    maxQueue: 256,
    /** Servers listed in the file are started. */
    disabled: false,
    /** Tool annotations (e.g. readOnlyHint) from upstreams are not believed unless trusted. */
    trusted: false,
    /**
     * 60 s for a server started through a package launcher (npx, uvx, ...): a first start that
     * installs packages takes 15-20 s, and one cut short leaves the launcher's cache broken.
     */
    launcherStartupTimeoutMs: 60_000,
  },
} as const);
