/**
 * A rehearsal of the call path, run once by a serving gateway while its upstreams start: a second
 * gateway, made in this process for it alone, is listed and called by a host and a server that
 * are both a few lines of code here, over the same line framing as stdio.
 *
 * Why: V8 runs each function slowly the first few times (no inline caches yet, no baseline
 * code), and a tools/call runs a long path once per call. The code cache spares the compiling,
 * not that: a fresh gateway's first call cost about 1.3 ms more of its CPU than its tenth, on a
 * call whose whole is a few milliseconds. The rehearsal's gateway shares every function with the
 * real one, so what V8 learns there (inline caches, object shapes, baseline code) serves the
 * real host's first call. It runs only while the real gateway waits for a server to start,
 * which usually takes far longer (a process, its handshake and its lists).
 *
 * Nothing of the real gateway is shared, by construction rather than by a "dry" flag every stage
 * would have to respect: the rehearsal's gateway has its own config (the defaults, and an audit
 * trail only when the real one has one), no policies, no pins, no telemetry, no shared store,
 * an audit log whose lines go nowhere, listings kept in memory, a config not checked against
 * the schema (that check loads its generated code and remembers the document in the state
 * folder), a silent logger, and a server and a host made here. It spawns nothing, writes no
 * file and opens no socket. A failure is logged (debug) and forgotten:
 * the real gateway never depends on it.
 */
import path from 'node:path';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { parseConfigText } from '../config/load.js';
import type { ServerConfig } from '../config/types.js';
import { silentLogger, type Logger } from '../core/logger.js';
import { HOST_MAX_DEPTH } from '../core/protocol/jsonRpc.js';
import { StreamTransport } from '../core/transports/streamTransport.js';
import type { ListingStore, ServerListing } from '../core/upstreams/startPolicy.js';
import { openAuditLog, type AuditLog } from '../features/audit/auditWriter.js';
import type { Redactor } from '../features/audit/redact.js';
import { loadPolicies } from '../features/policy/loadPolicies.js';
import { createGateway, type Gateway } from './gateway.js';

/** The most the whole rehearsal may take; past it, it is stopped where it is. */
const DEADLINE_MS = 2000;
const MAX_LINE_BYTES = 1024 * 1024;
/**
 * The rehearsal server's tools, shaped as most tools are: an object with a required string, one
 * answering text alone and one with structured content checked against its output schema.
 */
const TOOLS = [
  {
    name: 'echo',
    description: 'Says the text back.',
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string', description: 'What to say back.' } },
      required: ['text'],
    },
  },
  {
    name: 'measure',
    description: 'Counts the characters of the text.',
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string', description: 'What to count.' } },
      required: ['text'],
    },
    outputSchema: {
      type: 'object',
      properties: { characters: { type: 'integer' } },
      required: ['characters'],
    },
  },
];
/**
 * The calls made, in order: V8 gives a function its inline caches once it has run a few times,
 * so the common tool is called three times and the structured one once.
 */
const CALLS = ['echo', 'measure', 'echo', 'echo'];

export interface RehearsalOptions {
  readonly version: string;
  /** The real gateway's redactor: pure, and its patterns are what the audit stage runs. */
  readonly redactor: Redactor;
  /** Whether the real gateway keeps an audit trail (the audit stage is then on its path). */
  readonly audit: boolean;
  /**
   * Whether the real gateway is waiting for a server to start (its process starting, its
   * handshake, its first lists). The rehearsal takes only that time: no step starts when this
   * says no, and it ends there, so a host's request waits at most for the step in progress.
   */
  readonly waiting: () => boolean;
  /** Where the rehearsal's end is told (debug). */
  readonly logger: Logger;
}

/** Runs the rehearsal; resolves when it is over, whatever happened (never rejects). */
export async function rehearseCallPath(options: RehearsalOptions): Promise<void> {
  const started = performance.now();
  let over = false;
  // One turn of the event loop between steps, for the real gateway's messages.
  const step = async (): Promise<boolean> => {
    await new Promise((resolve) => setImmediate(resolve));
    over ||= !options.waiting();
    return !over;
  };
  try {
    const calls = await rehearse(options, step);
    options.logger.debug(
      `call path rehearsed (${calls} of ${CALLS.length} calls) in ${(performance.now() - started).toFixed(1)} ms`,
    );
  } catch (error) {
    options.logger.debug(`call path rehearsal stopped: ${(error as Error).message}`);
  }
}

/** The rehearsal; resolves with the calls it made, ending early when `step` says no. */
async function rehearse(options: RehearsalOptions, step: () => Promise<boolean>): Promise<number> {
  if (!(await step())) return 0;
  const { gateway, host, audit } = await rehearsalGateway(options);
  const deadline = new Deadline(DEADLINE_MS);
  let calls = 0;
  try {
    if (!(await step())) return calls;
    await deadline.race(gateway.start());
    await deadline.race(
      host.request('initialize', {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'mcp-warden rehearsal', version: options.version },
      }),
    );
    host.notify('notifications/initialized');
    if (!(await step())) return calls;
    const listed = (await deadline.race(host.request('tools/list', {}))) as { tools?: { name: string }[] };
    // The gateway names them (`rehearsal__echo`): found by the server's names at their end.
    const named = new Map(
      listed.tools?.map((tool) => [tool.name.slice(tool.name.lastIndexOf('_') + 1), tool.name]),
    );
    for (const tool of CALLS) {
      const name = named.get(tool);
      if (name === undefined) throw new Error(`the rehearsal server’s tool ${tool} was not listed`);
      if (!(await step())) return calls;
      await deadline.race(host.request('tools/call', { name, arguments: { text: `rehearsal ${calls}` } }));
      calls++;
    }
    return calls;
  } finally {
    deadline.clear();
    host.end();
    await gateway.close('the rehearsal is over');
    audit?.close();
  }
}

/** The rehearsal's gateway, its server answering on its pipe, and the pipe of its host. */
async function rehearsalGateway(
  options: RehearsalOptions,
): Promise<{ readonly gateway: Gateway; readonly host: LinePipe; readonly audit: AuditLog | undefined }> {
  const config = parseConfigText(rehearsalConfigText({ audit: options.audit }), {
    // Never read: the text is given, and nothing in it names a file relative to it.
    file: path.join(path.sep, 'mcp-warden-rehearsal.json'),
    env: {},
    author: 'built-in',
  }).config;
  const audit: AuditLog | undefined = options.audit
    ? await openAuditLog({
        file: 'rehearsal-audit.jsonl',
        onFailure: 'continue',
        writes: 'per-tick',
        redactor: options.redactor,
        // Written nowhere: the lines are made and dropped.
        output: { write: () => {} },
      })
    : undefined;
  const host = new LinePipe();
  const server = new LinePipe();
  server.serve(answerAsServer);
  const noLines = (): void => {};
  const gateway = createGateway({
    config,
    logger: silentLogger,
    host: new StreamTransport({
      input: host.toGateway,
      output: host.fromGateway,
      maxLineBytes: MAX_LINE_BYTES,
      answerInvalid: true,
      maxDepth: HOST_MAX_DEPTH,
      onJunk: noLines,
      onOversize: noLines,
    }),
    version: options.version,
    policies: await loadPolicies([]),
    redactor: options.redactor,
    ...(audit && { audit }),
    // Kept in memory: the real gateway's listings are kept in the user's state folder.
    listings: new MemoryListings(),
    connectUpstream: () =>
      new StreamTransport({
        input: server.toGateway,
        output: server.fromGateway,
        maxLineBytes: MAX_LINE_BYTES,
        maxUnreadBytes: MAX_LINE_BYTES,
        onJunk: noLines,
        onOversize: noLines,
      }),
  });
  return { gateway, host, audit };
}

/** The rehearsal gateway's config: the defaults, one server, and an audit trail when asked. */
export function rehearsalConfigText(options: { readonly audit: boolean }): string {
  return JSON.stringify({
    servers: { rehearsal: { command: process.execPath } },
    ...(options.audit && { audit: { file: 'rehearsal-audit.jsonl' } }),
  });
}

/** What the rehearsal server answers: initialize, its tools, and their calls. */
function answerAsServer(method: string, params: Record<string, unknown>): unknown {
  switch (method) {
    case 'initialize':
      return {
        protocolVersion: params['protocolVersion'],
        capabilities: { tools: {} },
        serverInfo: { name: 'mcp-warden rehearsal', version: '1' },
      };
    case 'tools/list':
      return { tools: TOOLS };
    case 'tools/call': {
      const text = String((params['arguments'] as { text?: unknown } | undefined)?.text ?? '');
      if (params['name'] !== 'measure') return { content: [{ type: 'text', text }] };
      const structuredContent = { characters: text.length };
      return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent };
    }
    default:
      return {};
  }
}

/**
 * Two streams carrying JSON-RPC lines between the rehearsal's gateway and one side made here
 * (its host or its server): the gateway reads `toGateway` and writes `fromGateway`.
 */
class LinePipe {
  readonly toGateway = new PassThrough();
  readonly fromGateway = new PassThrough();
  private nextId = 1;
  private readonly waiting = new Map<
    number,
    { resolve: (result: unknown) => void; reject: (e: Error) => void }
  >();
  private answer: ((method: string, params: Record<string, unknown>) => unknown) | undefined;

  constructor() {
    // Nothing of the rehearsal may throw into the real gateway's process: a stream's error has
    // a listener, and a line that is not JSON is dropped (its request then meets the deadline).
    this.toGateway.on('error', () => {});
    this.fromGateway.on('error', () => {});
    readLines(this.fromGateway, (line) => {
      try {
        this.received(line);
      } catch {
        // Dropped, as above.
      }
    });
  }

  /** Answers the gateway's requests with `answer` (as a server does). */
  serve(answer: (method: string, params: Record<string, unknown>) => unknown): void {
    this.answer = answer;
  }

  request(method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      write(this.toGateway, { jsonrpc: '2.0', id, method, params });
    });
  }

  notify(method: string): void {
    write(this.toGateway, { jsonrpc: '2.0', method });
  }

  end(): void {
    this.toGateway.end();
  }

  private received(line: string): void {
    const message = JSON.parse(line) as {
      id?: number | string;
      method?: string;
      params?: Record<string, unknown>;
      result?: unknown;
      error?: { message?: string };
    };
    if (message.method !== undefined) {
      // The gateway's requests to its host (pings, a server's questions) and to its server.
      if (message.id === undefined) return;
      const result = this.answer?.(message.method, message.params ?? {}) ?? {};
      write(this.toGateway, { jsonrpc: '2.0', id: message.id, result });
      return;
    }
    const waiting = this.waiting.get(message.id as number);
    if (waiting === undefined) return;
    this.waiting.delete(message.id as number);
    if (message.error !== undefined) waiting.reject(new Error(message.error.message ?? 'an error'));
    else waiting.resolve(message.result);
  }
}

function write(stream: Writable, message: unknown): void {
  stream.write(`${JSON.stringify(message)}\n`);
}

/** Calls `onLine` with each line of `stream`. */
function readLines(stream: Readable, onLine: (line: string) => void): void {
  let rest = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    rest += chunk;
    let end: number;
    while ((end = rest.indexOf('\n')) !== -1) {
      const line = rest.slice(0, end);
      rest = rest.slice(end + 1);
      if (line !== '') onLine(line);
    }
  });
}

/** Listings kept for the rehearsal's life only. */
class MemoryListings implements ListingStore {
  private readonly kept = new Map<string, ServerListing>();

  read(server: ServerConfig): ServerListing | undefined {
    return this.kept.get(server.name);
  }

  write(server: ServerConfig, listing: ServerListing): void {
    this.kept.set(server.name, listing);
  }
}

/** One timer for the whole rehearsal: each step races it. */
class Deadline {
  private timer: NodeJS.Timeout | undefined;
  private readonly expired: Promise<never>;

  constructor(ms: number) {
    this.expired = new Promise<never>((_resolve, reject) => {
      this.timer = setTimeout(() => reject(new Error(`it took over ${ms} ms`)), ms);
      this.timer.unref();
    });
    // Nobody may be racing it when it fires.
    this.expired.catch(() => {});
  }

  race<T>(work: Promise<T>): Promise<T> {
    return Promise.race([work, this.expired]);
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}
