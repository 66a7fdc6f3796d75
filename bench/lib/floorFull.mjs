// The least a gateway can do per tool call to do everything warden-full does with one, for
// bench/floor.mjs (FLOOR_FULL=POLICYFILE, with FLOOR_AUDIT=FILE). Not the gateway's code: written
// as plainly as Node allows, so that the floor with it shows what warden-full's per-call jobs cost
// any gateway, whoever wrote it. For each `tools/call` from the host, in warden's stage order:
//
// - the request's params are checked (a name, arguments an object) and the exposed name
//   (`bench__echo`) resolved to the server's own tool; an unknown tool is a -32602 error;
// - its `call_start` record is queued (the audit trail of floorAudit.mjs writes it ahead);
// - its arguments are validated against the tool's `inputSchema` (ajv, compiled on the tool's
//   first call and kept with its definition); invalid ones are refused;
// - the policy decides it (the rules of POLICYFILE, compiled once: globs to regular
//   expressions, `arguments` conditions with ajv; per tool, the rules that can match it are
//   found once, so a call only tests their `arguments` conditions); a denied call is refused;
// - its deadline is set (warden's defaults: 5 minutes without an answer or progress, 30 minutes
//   at most), on one timer for every call; on expiry the host gets an error and the server
//   `notifications/cancelled`;
// - it takes one of the server's 16 slots, or waits in a bounded queue (256) for one;
// - it is forwarded under the server's name, with a progress token of the floor's own (progress
//   restarts the idle deadline and is passed on under the host's token, if it asked for any);
// - its result is repaired as warden's defaults repair it (see `repair`);
// - its answer's record carries the decision, the outcome and the repairs.
//
// A refused call is answered, as warden answers it, with a result marked `isError` that says
// why, and recorded; it never reaches the server. What it leaves out is listed in bench/README.md
// ("The least gateway that does warden-full's per-call work: json-floor-full").

import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';

/** warden's defaults: `gateway.callTimeoutMs`, `maxCallTimeoutMs`, `maxConcurrency`, `maxQueue`. */
const IDLE_MS = 300_000;
const MAX_MS = 1_800_000;
const MAX_CONCURRENCY = 16;
const MAX_QUEUE = 256;
const SEPARATOR = '__';
/** The most text blocks tried as structured content (as warden's structuredFromText). */
const MAX_CANDIDATES = 8;

// One ajv instance per dialect, made when first needed; options as warden's for untrusted
// schemas: strict off (upstream schemas carry vendor keywords), nothing coerced or filled in,
// the first error only, own properties only, nothing registered under a schema's `$id`.
const AJV_OPTIONS = {
  strict: false,
  allErrors: false,
  ownProperties: true,
  addUsedSchema: false,
  logger: false,
};
const ajvs = new Map();
function ajvFor(dialect) {
  let ajv = ajvs.get(dialect);
  if (ajv === undefined)
    ajvs.set(dialect, (ajv = dialect === '2020-12' ? new Ajv2020(AJV_OPTIONS) : new Ajv(AJV_OPTIONS)));
  return ajv;
}

/**
 * A schema's validator, or null when it cannot be compiled (the tool's calls then pass
 * unchecked, as in warden: the schema is the server's own, and it could declare a lax one).
 */
function compileSchema(schema) {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return null;
  const { $schema, $id: _id, ...body } = schema;
  const dialect =
    $schema === undefined || /draft-07/.test($schema)
      ? 'draft-07'
      : /2020-12/.test($schema)
        ? '2020-12'
        : null;
  if (dialect === null) return null;
  try {
    return ajvFor(dialect).compile(body);
  } catch {
    return null;
  }
}

/** A glob of warden's policy language (`*` any run, `?` one character) as a RegExp. */
function globRegExp(glob) {
  if (/[[\\]/.test(glob)) throw new Error(`the floor does not read the glob ${JSON.stringify(glob)}`);
  const source = glob
    .replace(/[.+^${}()|]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`, 'u');
}

function globsOf(value) {
  if (value === undefined) return null;
  return (Array.isArray(value) ? value : [value]).map(globRegExp);
}

const anyMatches = (globs, text) => globs.some((glob) => glob.test(text));

/**
 * The rules of a policy file (JSON, warden's format) compiled once. Only what the bench's policy
 * uses is read (`server`, `tool`, `kind`, `arguments`; `allow` and `deny`); anything else is
 * refused at start, so the floor never judges by less than the file says.
 */
function loadPolicy(file) {
  const policy = JSON.parse(readFileSync(file, 'utf8'));
  const rules = (policy.rules ?? []).map((rule) => {
    const unknown = Object.keys(rule.match ?? {}).filter(
      (key) => !['server', 'tool', 'kind', 'arguments'].includes(key),
    );
    if (unknown.length > 0 || !['allow', 'deny'].includes(rule.action))
      throw new Error(`the floor does not read rule ${rule.id}: ${unknown.join(', ') || rule.action}`);
    const match = rule.match ?? {};
    let args = null;
    if (match.arguments !== undefined) {
      args = compileSchema(match.arguments);
      if (args === null) throw new Error(`rule ${rule.id}: its arguments schema does not compile`);
    }
    const kinds = match.kind === undefined ? null : Array.isArray(match.kind) ? match.kind : [match.kind];
    return {
      id: rule.id,
      server: globsOf(match.server),
      tool: globsOf(match.tool),
      kinds,
      args,
      deny: rule.action === 'deny',
      decision: `{"effect":"${rule.action}","rule":${JSON.stringify(rule.id)}}`,
      reason: `${rule.reason ?? `${rule.action === 'deny' ? 'Denied' : 'Allowed'} by policy rule "${rule.id}".`} (policy rule "${rule.id}", policy.json)`,
    };
  });
  const deny = policy.default === 'deny';
  const fallback = {
    id: null,
    deny,
    decision: `{"effect":"${deny ? 'deny' : 'allow'}","rule":null}`,
    reason: `No policy rule matches this call; the default is to ${deny ? 'deny' : 'allow'} it. (policy default)`,
  };
  return { rules, fallback };
}

/** Whether `content` has a text block (what a host reading only text needs). */
function hasText(content) {
  return Array.isArray(content) && content.some((block) => block?.type === 'text');
}

const isObject = (value) => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A tool's output validator, compiled on first use; null when it has no schema or it cannot be. */
function outputValidator(tool) {
  if (tool.output === undefined)
    tool.output =
      tool.definition.outputSchema === undefined ? null : compileSchema(tool.definition.outputSchema);
  return tool.output;
}

/**
 * A tool call's result as warden's default repairs leave it, and the names of the repairs made
 * (none: the same object). In order: structured content that is not an object is removed; an
 * object that fails the tool's outputSchema is removed and the result marked isError with a
 * note; a tool with an outputSchema that sent none (and no error) has it taken from a text
 * block whose JSON is the one valid object there, or the result is marked isError; structured
 * content without any text block gets its JSON as one.
 */
export function repair(result, tool) {
  let structured = result.structuredContent;
  const validate = outputValidator(tool);
  if (structured === undefined && validate === null) return { result, repairs: [] };
  const repairs = [];
  let content = Array.isArray(result.content) ? result.content : [];
  let isError = result.isError === true;
  if (structured !== undefined && !isObject(structured)) {
    if (!hasText(content)) content = [...content, { type: 'text', text: JSON.stringify(structured) }];
    structured = undefined;
    repairs.push('structured-not-object');
  }
  if (structured !== undefined && validate !== null && validate(structured) !== true) {
    const problem = `structuredContent${validate.errors?.[0]?.instancePath ?? ''} ${validate.errors?.[0]?.message ?? 'does not match'}`;
    const blocks = hasText(content) ? [] : [{ type: 'text', text: JSON.stringify(structured) }];
    blocks.push({
      type: 'text',
      text: `[floor] The result's structuredContent did not match the tool's outputSchema (${problem}); it was removed${isError ? '' : ' and the result marked as an error'}.`,
    });
    content = [...content, ...blocks];
    structured = undefined;
    isError = true;
    repairs.push('structured-invalid');
  } else if (structured === undefined && validate !== null && !isError) {
    let found;
    let candidates = 0;
    let ambiguous = false;
    for (const block of content) {
      if (block?.type !== 'text' || typeof block.text !== 'string' || !block.text.trimStart().startsWith('{'))
        continue;
      let value;
      try {
        value = JSON.parse(block.text);
      } catch {
        continue;
      }
      if (!isObject(value) || ++candidates > MAX_CANDIDATES || validate(value) !== true) continue;
      if (found === undefined) found = value;
      else if (JSON.stringify(found) !== JSON.stringify(value)) ambiguous = true;
    }
    if (found !== undefined && !ambiguous) {
      structured = found;
      repairs.push('structured-from-text');
    } else {
      content = [
        ...content,
        {
          type: 'text',
          text: '[floor] The tool declares an outputSchema but sent no structuredContent: the result is marked as an error.',
        },
      ];
      isError = true;
      repairs.push('structured-missing');
    }
  }
  if (structured !== undefined && structured !== null && !hasText(content)) {
    content = [...content, { type: 'text', text: JSON.stringify(structured) }];
    repairs.push('text-added');
  }
  if (repairs.length === 0) return { result, repairs };
  const repaired = { ...result, content };
  if (structured === undefined) delete repaired.structuredContent;
  else repaired.structuredContent = structured;
  if (isError) repaired.isError = true;
  return { result: repaired, repairs };
}

/** One tool call the floor has taken in: what its answer, deadline, slot and record need. */
class Call {
  constructor(id, hostId, hostToken, tool, message) {
    this.id = id;
    this.hostId = hostId;
    this.hostToken = hostToken;
    this.tool = tool;
    /** The request to forward, while it waits for a slot. */
    this.message = message;
    this.waiting = false;
    this.started = performance.now();
    // Its place in the deadline list.
    this.deadline = 0;
    this.linked = false;
    this.prev = undefined;
    this.next = undefined;
  }
}

/**
 * The per-call jobs. `toChild` and `toHost` queue a line for this turn's write each way (the
 * floor's writers, behind the audit trail); `audit` is the trail (FloorAudit).
 */
export class FloorFull {
  constructor({
    policyFile,
    server = 'bench',
    idleMs = IDLE_MS,
    maxMs = MAX_MS,
    audit,
    toChild,
    toHost,
    newId,
  }) {
    this.policy = loadPolicy(policyFile);
    this.server = server;
    this.prefix = `${server}${SEPARATOR}`;
    this.idleMs = idleMs;
    this.maxMs = maxMs;
    this.audit = audit;
    this.toChild = toChild;
    this.toHost = toHost;
    this.newId = newId;
    /**
     * The server's tools by their own name (definition, validators, rules): from the floor's own
     * list once the server is initialized, then from every list that passes. Undefined until
     * the first list is in; tool calls wait for it in `held`.
     */
    this.tools = undefined;
    this.held = [];
    /** The floor's own list, page by page. */
    this.listing = undefined;
    /** The floor's ids of `tools/list` requests in flight: whether each asked for a later page. */
    this.lists = new Map();
    /** Tool calls in flight (forwarded or waiting for a slot), by the floor's id. */
    this.calls = new Map();
    this.active = 0;
    this.queue = [];
    // The deadline list, earliest first, and its one timer.
    this.head = undefined;
    this.tail = undefined;
    this.timer = undefined;
    this.armedFor = 0;
    this.fire = () => this.expire();
  }

  /**
   * A request from the host, with the floor's id for it. True when the floor took it over (a
   * tool call: answered or forwarded from here); false to let the floor pass it on as it does.
   */
  request(message, id) {
    const method = message.method;
    if (method === 'tools/list') {
      this.lists.set(id, message.params?.cursor !== undefined);
      return false;
    }
    if (method !== 'tools/call') return false;
    if (this.tools === undefined) {
      this.held.push([message, id]);
      return true;
    }
    const params = message.params;
    const name = params?.name;
    const args = params?.arguments;
    if (typeof name !== 'string' || (args !== undefined && !isObject(args))) {
      this.toHost(
        rpcError(
          message.id,
          -32602,
          'tools/call needs params.name (a string) and params.arguments an object',
        ),
      );
      return true;
    }
    const tool = name.startsWith(this.prefix) ? this.tools.get(name.slice(this.prefix.length)) : undefined;
    if (tool === undefined) {
      this.toHost(rpcError(message.id, -32602, `Unknown tool: ${name}`));
      return true;
    }
    const upstreamName = tool.name;
    const route = tool.route;
    // Validation first, as warden orders them: policy judges arguments as the server gets them.
    const problem = this.invalidArguments(tool, args ?? {});
    if (problem !== undefined) {
      this.audit.request(message, id, route, '{"effect":"deny","rule":null}');
      const text = `Invalid arguments for tool "${upstreamName}" on server "${this.server}": ${problem}. The call was not run.`;
      return this.refuse(message.id, id, 'invalid_arguments', 'INVALID_ARGUMENTS', text);
    }
    const rule = this.decide(tool, args ?? {});
    this.audit.request(message, id, route, rule.decision);
    if (rule.deny) {
      const text = `${rule.reason} The call to tool "${upstreamName}" on server "${this.server}" was not run.`;
      return this.refuse(message.id, id, 'denied', 'DENIED', text);
    }
    const meta = params._meta;
    const call = new Call(id, message.id, meta?.progressToken, tool, message);
    message.id = id;
    params.name = upstreamName;
    // The floor's id is the call's progress token upstream, so progress restarts its deadline.
    if (meta === undefined) params._meta = { progressToken: id };
    else {
      const sent = {};
      for (const key in meta) if (key !== 'progressToken') sent[key] = meta[key];
      sent.progressToken = id;
      params._meta = sent;
    }
    this.calls.set(id, call);
    this.schedule(call, call.started + Math.min(this.idleMs, this.maxMs));
    if (this.active < MAX_CONCURRENCY && this.queue.length === 0) this.send(call);
    else if (this.queue.length >= MAX_QUEUE) {
      this.finish(call);
      this.audit.finish(id, 'queue_full', undefined, `Server "${this.server}" is busy`);
      this.toHost(
        toolError(
          call.hostId,
          'QUEUE_FULL',
          `Server "${this.server}" is busy: ${MAX_CONCURRENCY} calls are running and ${MAX_QUEUE} are waiting (maxConcurrency/maxQueue); try again later.`,
        ),
      );
    } else {
      call.waiting = true;
      this.queue.push(call);
    }
    return true;
  }

  /** The first problem with the arguments, or undefined when they match the tool's inputSchema. */
  invalidArguments(tool, args) {
    if (tool.input === undefined) tool.input = compileSchema(tool.definition.inputSchema);
    const validate = tool.input;
    if (validate === null || validate(args) === true) return undefined;
    const error = validate.errors?.[0];
    return `${error?.instancePath || 'the arguments'} ${error?.message ?? 'do not match the inputSchema'}`;
  }

  /** The deciding rule (or the default) for a call of `tool`. */
  decide(tool, args) {
    // The rules that can match this tool at all, found on its first call.
    if (tool.rules === undefined)
      tool.rules = this.policy.rules.filter(
        (rule) =>
          (rule.server === null || anyMatches(rule.server, this.server)) &&
          (rule.kinds === null || rule.kinds.includes('tool')) &&
          (rule.tool === null || anyMatches(rule.tool, tool.name)),
      );
    for (const rule of tool.rules) if (rule.args === null || rule.args(args) === true) return rule;
    return this.policy.fallback;
  }

  /** Answers a call the floor refuses before it is forwarded, and records its outcome. */
  refuse(hostId, id, outcome, code, text) {
    this.audit.finish(id, outcome, undefined, text);
    this.toHost(toolError(hostId, code, text));
    return true;
  }

  send(call) {
    this.active++;
    this.toChild(JSON.stringify(call.message));
    call.message = undefined;
  }

  /** The call leaves every table; its slot, if it held one, goes to the next in the queue. */
  finish(call) {
    this.calls.delete(call.id);
    this.unschedule(call);
    if (call.waiting) {
      call.waiting = false;
      this.queue.splice(this.queue.indexOf(call), 1);
      return false;
    }
    this.active--;
    while (this.active < MAX_CONCURRENCY && this.queue.length > 0) {
      const next = this.queue.shift();
      next.waiting = false;
      this.send(next);
    }
    return true;
  }

  /**
   * A message from the server (`line` as read). True when the floor took it over (a tool call's
   * answer, progress for one); false to let the floor pass it on (a list's answer has its
   * tools' names exposed and their definitions kept first).
   */
  fromServer(message, line) {
    const id = message.id;
    if (message.method === undefined && id !== undefined) {
      const call = this.calls.get(id);
      if (call === undefined) {
        if (this.listing?.id === id) {
          this.ownList(message.result);
          return true;
        }
        const later = this.lists.get(id);
        if (later !== undefined) {
          this.lists.delete(id);
          this.listed(message.result?.tools, later);
        }
        return false;
      }
      this.finish(call);
      let repairs = '[]';
      const result = message.result;
      if (result !== undefined) {
        const repaired = repair(result, call.tool);
        if (repaired.repairs.length > 0) {
          message.result = repaired.result;
          repairs = JSON.stringify(repaired.repairs);
        }
      }
      this.audit.answer(message, line, repairs);
      message.id = call.hostId;
      this.toHost(JSON.stringify(message));
      return true;
    }
    if (message.method === 'notifications/progress') {
      const call = this.calls.get(message.params?.progressToken);
      if (call === undefined || call.waiting) return true;
      this.schedule(call, Math.min(performance.now() + this.idleMs, call.started + this.maxMs));
      if (call.hostToken !== undefined) {
        message.params.progressToken = call.hostToken;
        this.toHost(JSON.stringify(message));
      }
      return true;
    }
    return false;
  }

  /** A host's list page passed: its tools are kept by name (a first page starts afresh) and exposed. */
  listed(tools, later) {
    if (!Array.isArray(tools)) return;
    if (this.tools !== undefined && !later) this.tools = new Map();
    for (const definition of tools) {
      if (typeof definition?.name !== 'string') continue;
      this.tools?.set(definition.name, this.toolOf(definition));
      definition.name = `${this.prefix}${definition.name}`;
    }
  }

  /**
   * The host's `notifications/initialized` has gone to the server: the floor lists its tools
   * itself (as a gateway does on connecting), so calls can be checked before the host lists.
   */
  initialized() {
    if (this.listing !== undefined) return;
    this.listing = { id: this.newId(), tools: new Map() };
    this.toChild(JSON.stringify({ jsonrpc: '2.0', id: this.listing.id, method: 'tools/list' }));
  }

  /** A page of the floor's own list: the next asked for, or the calls held are let go. */
  ownList(result) {
    const { tools } = this.listing;
    for (const definition of Array.isArray(result?.tools) ? result.tools : [])
      if (typeof definition?.name === 'string') tools.set(definition.name, this.toolOf(definition));
    if (typeof result?.nextCursor === 'string') {
      this.listing.id = this.newId();
      this.toChild(
        JSON.stringify({
          jsonrpc: '2.0',
          id: this.listing.id,
          method: 'tools/list',
          params: { cursor: result.nextCursor },
        }),
      );
      return;
    }
    this.listing.id = undefined;
    this.tools ??= tools;
    const held = this.held;
    this.held = [];
    for (const [message, id] of held) this.request(message, id);
  }

  /**
   * A tool as the floor keeps it: its own name apart (the definition's is exposed), its route
   * (the names its records carry, one object per tool so the trail writes their text once), its
   * validators and its rules, made on its first call.
   */
  toolOf(definition) {
    const { name } = definition;
    const route = { tool: `${this.prefix}${name}`, server: this.server, upstreamTool: name };
    return { name, route, definition, input: undefined, output: undefined, rules: undefined };
  }

  /** The host cancelled a request: true when it was a tool call of ours (then handled here). */
  hostCancelled(message) {
    const hostId = message.params?.requestId;
    for (const call of this.calls.values()) {
      if (call.hostId !== hostId) continue;
      const reason = String(message.params?.reason ?? 'no reason given');
      // The server hears of it before a waiting call takes the slot.
      if (!call.waiting) this.cancelUpstream(call.id, reason);
      this.finish(call);
      this.audit.finish(call.id, 'cancelled', undefined, `The host cancelled the call: ${reason}`);
      return true;
    }
    return false;
  }

  /** The audit trail could not write this call's `call_start`: it must not be forwarded. */
  refused(id) {
    const call = this.calls.get(id);
    if (call === undefined) return undefined;
    // Forwarded in this very turn (its line is then taken back out of the turn's writes), or
    // still waiting for a slot (it then never goes).
    const sent = this.finish(call);
    return { hostId: call.hostId, sent };
  }

  cancelUpstream(id, reason) {
    this.toChild(
      JSON.stringify({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: id, reason },
      }),
    );
  }

  // The deadline list: calls sorted by deadline, one timer armed for the first. All calls have
  // the same limits, so a new one goes at the tail at once; progress moves one back.

  schedule(call, deadline) {
    if (call.linked) this.unlink(call);
    call.deadline = deadline;
    call.linked = true;
    let before = this.tail;
    while (before !== undefined && before.deadline > deadline) before = before.prev;
    call.prev = before;
    call.next = before === undefined ? this.head : before.next;
    if (call.next === undefined) this.tail = call;
    else call.next.prev = call;
    if (before === undefined) this.head = call;
    else before.next = call;
    if (this.timer === undefined || this.armedFor > deadline) this.arm(deadline);
  }

  unschedule(call) {
    if (!call.linked) return;
    this.unlink(call);
    if (this.head === undefined && this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }

  unlink(call) {
    const { prev, next } = call;
    if (prev === undefined) this.head = next;
    else prev.next = next;
    if (next === undefined) this.tail = prev;
    else next.prev = prev;
    call.prev = call.next = undefined;
    call.linked = false;
  }

  arm(deadline) {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.armedFor = deadline;
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(deadline - performance.now())));
    this.timer.unref();
  }

  /** Calls past their deadline: the host is answered, the server told, the slot freed. */
  expire() {
    this.timer = undefined;
    const now = performance.now();
    for (let call = this.head; call !== undefined && call.deadline <= now; call = this.head) {
      const max = now - call.started >= this.maxMs;
      const limit = max ? this.maxMs : this.idleMs;
      const name = call.tool.name;
      const text = max
        ? `Tool "${name}" on server "${this.server}" timed out: it ran for ${limit} ms, its maximum, despite progress; the call was cancelled upstream.`
        : `Tool "${name}" on server "${this.server}" timed out: no answer or progress for ${limit} ms (its timeout); the call was cancelled upstream.`;
      if (!call.waiting) this.cancelUpstream(call.id, text);
      this.finish(call);
      this.audit.finish(call.id, 'timeout', undefined, text);
      this.toHost(toolError(call.hostId, 'CALL_TIMEOUT', text));
    }
    if (this.head !== undefined && this.timer === undefined) this.arm(this.head.deadline);
  }
}

function rpcError(id, code, message) {
  return JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } });
}

/** A refusal as warden answers one: a tool result marked isError, saying why, tagged as the floor's. */
function toolError(id, code, text) {
  return JSON.stringify({
    jsonrpc: '2.0',
    id,
    result: {
      content: [{ type: 'text', text: `[floor] ${text}` }],
      isError: true,
      _meta: { 'floor/error': code },
    },
  });
}
