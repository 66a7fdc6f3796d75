import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolChangedEvent, ToolPinnedEvent } from '../../core/events.js';
import { toolFilter } from '../../core/catalog/namedCatalog.js';
import type { PinsConfig, ServerConfig } from '../../config/types.js';
import { describeError } from '../../lib/describeError.js';
import type { Logger } from '../../core/logger.js';
import { pinAction, reviewTool, type PinStatus, type ToolReview } from './pinDecision.js';
import {
  addPins,
  mergePins,
  newPin,
  NO_PINS,
  parsePinText,
  pinOf,
  readPinText,
  type PinEntry,
  type PinSet,
} from './pinFile.js';
import { pinsCommand } from './reviewCommands.js';
import { MAX_CANONICAL_DEPTH } from '../../lib/canonicalJson.js';

/** Why a tool is kept from the host, and what a call to it is answered. */
export interface BlockedTool {
  readonly status: Exclude<PinStatus['kind'], 'unchanged'>;
  /** For the model and the user: what changed, since when, and the commands that accept it. */
  readonly message: string;
}

/** An audit event of the pins, without the session (the gateway adds it). */
export type PinEvent = Omit<ToolPinnedEvent, 'session'> | Omit<ToolChangedEvent, 'session'>;

export interface PinGuardOptions {
  readonly settings: PinsConfig;
  /** The config file, as the commands in messages name it. */
  readonly configFile: string;
  /** Which of each server's tools are exposed (`tools.include/exclude`): only those are pinned. */
  readonly servers: readonly Pick<ServerConfig, 'name' | 'tools'>[];
  /** The pins file as read at start (an invalid one stops start-up before this). */
  readonly initial: { readonly pins: PinSet; readonly text: string | undefined };
  readonly logger: Logger;
  /** Receives `tool_pinned` and `tool_changed` events, for the audit trail. */
  readonly record: (event: PinEvent) => void;
  /** The clock pins are dated by; tests set it. */
  readonly now?: () => Date;
}

/** One upstream's tools, as last listed. */
export interface ListedTools {
  readonly name: string;
  readonly tools: readonly Tool[];
}

/**
 * The gateway's side of pinning (docs/reference/how-it-behaves.md, "Pinning tool definitions"): holds each upstream's tools
 * against the pins file whenever they are listed, pins new ones, and keeps the set of tools that
 * are blocked. That set is all the call path reads: one Map lookup per call (`refusal`).
 */
export class PinGuard {
  private pins: PinSet;
  /** The file's text as last read or written by us: a change event with this text is our own write. */
  private knownText: string | undefined;
  /** Server → upstream tool name → why it is blocked. */
  private readonly blocked = new Map<string, ReadonlyMap<string, BlockedTool>>();
  /**
   * `server\0tool` → the hash listed when it was last reported as differing (each change is
   * told once), and the hash it was pinned with then (null: no pin).
   */
  private readonly reported = new Map<string, { readonly listed: string; readonly pinned: string | null }>();
  private exposed: ReadonlyMap<string, (name: string) => boolean>;
  private readonly now: () => Date;

  constructor(private readonly options: PinGuardOptions) {
    this.pins = options.initial.pins;
    this.knownText = options.initial.text;
    this.exposed = new Map(options.servers.map((s) => [s.name, toolFilter(s.tools)]));
    this.now = options.now ?? (() => new Date());
  }

  /**
   * The servers an edit of the config left: each server's tools are pinned under its filters as
   * they are now (an upstream that changed is listed, and so reviewed, again).
   */
  serversChanged(servers: PinGuardOptions['servers']): void {
    this.exposed = new Map(servers.map((s) => [s.name, toolFilter(s.tools)]));
  }

  /** Why a call to this tool must not run; undefined when it may. */
  refusal(server: string, tool: string): BlockedTool | undefined {
    return this.blocked.get(server)?.get(tool);
  }

  isBlocked(server: string, tool: string): boolean {
    return this.blocked.get(server)?.has(tool) === true;
  }

  /**
   * Holds one upstream's listed tools against their pins: pins new ones (`onNew: pin`), reports
   * changed ones (log and audit, once per definition), and updates which are blocked.
   */
  review(upstream: ListedTools): void {
    const server = upstream.name;
    const exposed = this.exposed.get(server);
    const tools = exposed === undefined ? upstream.tools : upstream.tools.filter((t) => exposed(t.name));
    let reviews = this.reviewAll(server, tools);
    const toPin = reviews.filter((r) => pinAction(r.status, this.options.settings) === 'pin');
    if (toPin.length > 0) {
      this.pinNew(server, toPin);
      // Another gateway may have pinned some of them first, differently: hold them against that.
      reviews = this.reviewAll(server, tools);
    }
    const blocked = new Map<string, BlockedTool>();
    for (const review of reviews) {
      const action = pinAction(review.status, this.options.settings);
      if (review.status.kind === 'unchanged') this.noteMatch(server, review);
      else if (action === 'block' || action === 'warn') this.report(server, review, action);
      if (action === 'block' && review.status.kind !== 'unchanged')
        blocked.set(review.tool, {
          status: review.status.kind,
          message: this.refusalMessage(server, review),
        });
    }
    this.blocked.set(server, blocked);
    const listed = new Set(tools.map((t) => t.name));
    for (const tool of this.pins.get(server)?.keys() ?? [])
      if (!listed.has(tool))
        this.options.logger.debug(`tool "${tool}" of server "${server}" is not listed now; its pin is kept`);
  }

  /**
   * The pins file changed on disk: reads it again. True when the pins in force changed, and
   * then every upstream's tools must be reviewed again. An invalid file is logged and ignored
   * (the pins in force stay); our own writes are recognised by their text and ignored.
   */
  reload(): boolean {
    const { file } = this.options.settings;
    let text: string | undefined;
    let pins: PinSet;
    try {
      text = readPinText(file);
      // Compared before parsing: our own writes come back here too, and a large file is slow to check.
      if (text === this.knownText) return false;
      pins = text === undefined ? NO_PINS : parsePinText(text, file);
    } catch (error) {
      this.options.logger.error(
        `the pins file changed and cannot be used; the pins in force stay:\n${describeError(error)}`,
      );
      return false;
    }
    this.pins = pins;
    this.knownText = text;
    return true;
  }

  private reviewAll(server: string, tools: readonly Tool[]): ToolReview[] {
    return tools.map((tool) => reviewTool(tool, pinOf(this.pins, server, tool.name)));
  }

  /** Pins tools seen for the first time, in the file (merged with what others wrote there). */
  private pinNew(server: string, reviews: readonly ToolReview[]): void {
    const now = this.now();
    const entries: PinEntry[] = reviews.map((r) => ({
      server,
      tool: r.tool,
      pin: newPin(r.definition, now),
    }));
    let written: readonly PinEntry[];
    try {
      const result = addPins(this.options.settings.file, entries, { replace: false });
      this.pins = result.pins;
      this.knownText = result.text;
      written = result.written;
    } catch (error) {
      // Served anyway (trust on first use) and held to this definition for the rest of the run:
      // a later change is still caught. The file gets them at the next successful write.
      this.options.logger.error(
        `could not write the pins file ${this.options.settings.file}; ${entries.length} new tool(s) of ` +
          `server "${server}" are pinned for this run only: ${describeError(error)}`,
      );
      const merged = mergePins(this.pins, entries, { replace: false });
      this.pins = merged.pins;
      return;
    }
    for (const { tool, pin } of written) {
      this.options.logger.info(
        `pinned tool "${tool}" of server "${server}" (sha256 ${pin.sha256.slice(0, 12)})`,
      );
      this.options.record({
        type: 'tool_pinned',
        server,
        upstreamTool: tool,
        sha256: pin.sha256,
        how: 'new',
      });
    }
  }

  /** Logs and records a tool that differs from its pin, once per definition seen. */
  private report(server: string, review: ToolReview, action: 'block' | 'warn'): void {
    const key = `${server}\u0000${review.tool}`;
    const { status, pin } = review;
    if (this.reported.get(key)?.listed === review.sha256) return;
    this.reported.set(key, { listed: review.sha256, pinned: pin?.sha256 ?? null });
    const fields = status.kind === 'changed' ? [...status.fields] : Object.keys(review.definition);
    const subject = `tool "${review.tool}" of server "${server}"`;
    const what =
      status.kind === 'changed'
        ? `${subject} changed since it was pinned on ${pin!.pinnedAt}: ${fields.join(', ')}`
        : status.kind === 'new'
          ? `${subject} is new and has no pin`
          : `${subject} nests more than ${MAX_CANONICAL_DEPTH} levels deep, too deep to pin`;
    const consequence =
      action === 'warn'
        ? 'still served (pins.onChange: warn)'
        : status.kind === 'unpinnable'
          ? 'blocked'
          : `blocked (pins.${status.kind === 'new' ? 'onNew' : 'onChange'}: block) until accepted`;
    const command =
      status.kind === 'unpinnable'
        ? ''
        : `; review: ${pinsCommand('diff', this.options.configFile, server, review.tool)}`;
    this.options.logger.warn(`${what}; ${consequence}${command}`);
    this.options.record({
      type: 'tool_changed',
      server,
      upstreamTool: review.tool,
      old: pin?.sha256 ?? null,
      new: review.sha256,
      fields,
      action,
    });
  }

  /**
   * A tool reported as differing matches its pin now: accepted, when its pin is not the one it
   * was held against then (`pins accept` wrote a new one); else the server went back to the
   * pinned definition.
   */
  private noteMatch(server: string, review: ToolReview): void {
    const key = `${server}\u0000${review.tool}`;
    const reported = this.reported.get(key);
    if (reported === undefined) return;
    this.reported.delete(key);
    const accepted = reported.pinned !== review.sha256;
    this.options.logger.info(
      `tool "${review.tool}" of server "${server}" matches its pin ${accepted ? 'as accepted' : 'again'} ` +
        `(sha256 ${review.sha256.slice(0, 12)}); served`,
    );
    if (accepted)
      this.options.record({
        type: 'tool_pinned',
        server,
        upstreamTool: review.tool,
        sha256: review.sha256,
        how: 'accepted',
      });
  }

  private refusalMessage(server: string, review: ToolReview): string {
    const subject = `Tool "${review.tool}" on server "${server}" was not run:`;
    const { status, pin } = review;
    if (status.kind === 'unpinnable')
      return (
        `${subject} its definition nests more than ${MAX_CANONICAL_DEPTH} levels deep, too deep to pin, ` +
        `so a change to it could not be detected.`
      );
    const why =
      status.kind === 'changed'
        ? `its definition changed since it was pinned on ${pin!.pinnedAt} (${status.fields.join(', ')}), ` +
          `and pins.onChange is "block".`
        : `it is new and has no pin yet, and pins.onNew is "block".`;
    const { configFile } = this.options;
    return (
      `${subject} ${why} A person must review the definition and accept it before it can be used: ` +
      `${pinsCommand('diff', configFile, server, review.tool)} then ` +
      `${pinsCommand('accept', configFile, server, review.tool)}`
    );
  }
}
