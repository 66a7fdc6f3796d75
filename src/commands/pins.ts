import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { didYouMean } from '../lib/didYouMean.js';
import { paletteFor, type Palette } from '../lib/colour.js';
import { plural } from '../lib/plural.js';
import type { PinsConfig, WardenConfig } from '../config/types.js';
import { WardenError } from '../core/errors.js';
import type { Logger } from '../core/logger.js';
import { describeChanges } from '../features/pins/definitionDiff.js';
import { reviewTool, type ToolReview } from '../features/pins/pinDecision.js';
import {
  addPins,
  newPin,
  pinOf,
  type PinEntry,
  type PinSet,
  type ToolPin,
} from '../features/pins/pinFile.js';
import { shellQuote, toolSelector } from '../features/pins/reviewCommands.js';
import { collectTools, type CatalogListing } from './tools.js';
import type { StartupProgress } from './progress.js';

/** `server` or `server/tool`, as the `pins` subcommands take them. */
export interface Selector {
  readonly server: string;
  readonly tool?: string;
}

/** A selector naming something the config or the upstreams do not have: a usage error. */
export class UnknownSelectorError extends WardenError {
  constructor(message: string) {
    super('INVALID_PARAMS', message);
  }
}

/**
 * Reads `server[/tool]` arguments against the config's servers. The tool part is everything
 * after the first `/` (server names cannot hold one; tool names may). An unknown server is an
 * error naming it, with the closest configured name.
 */
export function parseSelectors(args: readonly string[], config: WardenConfig): Selector[] {
  const names = config.servers.map((s) => s.name);
  return args.map((arg) => {
    const slash = arg.indexOf('/');
    const server = slash === -1 ? arg : arg.slice(0, slash);
    const tool = slash === -1 ? undefined : arg.slice(slash + 1);
    if (!names.includes(server)) {
      const suggestion = didYouMean(server, names);
      throw new UnknownSelectorError(
        `unknown server "${server}" in "${arg}"${suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`}; ` +
          `the config has: ${names.join(', ')}`,
      );
    }
    if (tool === '') throw new UnknownSelectorError(`"${arg}" names no tool after the "/"`);
    return tool === undefined ? { server } : { server, tool };
  });
}

/** The selected tools held against their pins, with the fate of the servers they come from. */
export interface PinComparison {
  /** Selected tools the upstreams list now, in config order, each held against its pin. */
  readonly reviews: readonly (ToolReview & { readonly server: string })[];
  /** Selected pins of tools no upstream lists now (their pins are kept). */
  readonly unlisted: readonly { readonly server: string; readonly tool: string; readonly pin: ToolPin }[];
  /** The selected servers that could not be asked (failed, disabled, still starting). */
  readonly unavailable: CatalogListing['servers'];
}

export interface ComparePinsOptions {
  readonly config: WardenConfig;
  readonly pins: PinSet;
  readonly selectors: readonly Selector[];
  readonly logger: Logger;
  readonly version: string;
  readonly progress?: StartupProgress;
}

/**
 * Starts the upstreams as serving would (`mcp-warden tools`), and holds each exposed tool of the
 * selected servers (all when none are selected) against its pin. A selected tool that is neither
 * listed nor pinned is an error naming it, with the closest name.
 */
export async function comparePins(options: ComparePinsOptions): Promise<PinComparison> {
  const { config, pins, selectors } = options;
  const { entries, servers } = await collectTools(options);
  const listed = new Map<string, Tool[]>();
  for (const entry of entries) listed.set(entry.server, [...(listed.get(entry.server) ?? []), entry.item]);
  const selectedServers = new Set(selectors.map((s) => s.server));
  const wholeServers = new Set(selectors.filter((s) => s.tool === undefined).map((s) => s.server));
  const selectedTools = new Set(
    selectors.flatMap((s) => (s.tool === undefined ? [] : [`${s.server}/${s.tool}`])),
  );
  const selected = (server: string, tool: string) =>
    selectors.length === 0 || wholeServers.has(server) || selectedTools.has(`${server}/${tool}`);

  const reviews: (ToolReview & { server: string })[] = [];
  const unlisted: { server: string; tool: string; pin: ToolPin }[] = [];
  for (const server of config.servers.map((s) => s.name)) {
    if (selectors.length > 0 && !selectedServers.has(server)) continue;
    const tools = listed.get(server) ?? [];
    for (const tool of tools)
      if (selected(server, tool.name))
        reviews.push({ server, ...reviewTool(tool, pinOf(pins, server, tool.name)) });
    const names = new Set(tools.map((t) => t.name));
    for (const [tool, pin] of pins.get(server) ?? [])
      if (!names.has(tool) && selected(server, tool)) unlisted.push({ server, tool, pin });
  }
  const unavailable = servers.filter(
    (s) => s.state !== 'ready' && (selectors.length === 0 || selectedServers.has(s.name)),
  );
  for (const { server, tool } of selectors) {
    if (tool === undefined || unavailable.some((s) => s.name === server)) continue;
    const known = [...(listed.get(server) ?? []).map((t) => t.name), ...(pins.get(server)?.keys() ?? [])];
    if (known.includes(tool)) continue;
    const suggestion = didYouMean(tool, known);
    throw new UnknownSelectorError(
      `server "${server}" lists no tool "${tool}" and none is pinned under that name` +
        (suggestion === undefined ? '' : ` (did you mean "${toolSelector(server, suggestion)}"?)`),
    );
  }
  return { reviews, unlisted, unavailable };
}

/** Whether the comparison found anything that does not match (what makes `pins diff` exit 1). */
export function differs(comparison: PinComparison): boolean {
  return comparison.reviews.some((r) => r.status.kind !== 'unchanged') || comparison.unavailable.length > 0;
}

/**
 * Each tool that does not match its pin and what changed (`pins diff`, and `pins accept` before
 * it pins); with `acceptHint`, the command that accepts them all.
 */
export function formatDiff(
  comparison: PinComparison,
  options: {
    readonly configFile: string;
    readonly acceptHint: boolean;
    /** Colours for a terminal: removed lines red, added ones green. Default: none. */
    readonly palette?: Palette;
    /** How many of the compared tools the policy files hide from the host. */
    readonly hiddenByPolicy?: number;
  },
): string {
  const paint = options.palette ?? paletteFor({}, {});
  const out: string[] = [];
  for (const review of comparison.reviews) {
    const { server, status, pin } = review;
    const name = toolSelector(server, review.tool);
    if (status.kind === 'unchanged') continue;
    if (status.kind === 'unpinnable') {
      out.push(`UNPINNABLE ${name}: its definition nests too deeply to pin; it stays blocked`, '');
      continue;
    }
    out.push(
      status.kind === 'changed'
        ? `${paint.bold(paint.yellow('CHANGED'))} ${name} (pinned ${pin!.pinnedAt}, sha256 ${short(pin!.sha256)} → ${short(review.sha256)}): ${status.fields.join(', ')}`
        : `${paint.bold(paint.green('NEW'))} ${name} (no pin; sha256 ${short(review.sha256)})`,
    );
    out.push(
      ...describeChanges(pin?.definition, review.definition).map((line) => paintDiffLine(`  ${line}`, paint)),
      '',
    );
  }
  for (const { server, tool, pin } of comparison.unlisted)
    out.push(`not listed now: ${toolSelector(server, tool)} (pinned ${pin.pinnedAt}; the pin is kept)`);
  for (const s of comparison.unavailable)
    out.push(
      `server ${s.name}: ${s.state}${s.error === undefined ? '' : `: ${s.error}`}; its tools were not compared`,
    );
  const count = (kind: string) => comparison.reviews.filter((r) => r.status.kind === kind).length;
  const matching = count('unchanged');
  out.push(
    `${matching} ${matching === 1 ? 'matches its pin' : 'match their pins'}, ${count('changed')} changed, ${count('new')} new`,
  );
  const hidden = options.hiddenByPolicy ?? 0;
  if (hidden > 0)
    out.push(
      `${hidden} of the tools compared ${hidden === 1 ? 'is' : 'are'} hidden from the host by policy (compared all the same: a policy can change)`,
    );
  const pending = acceptable(comparison);
  if (options.acceptHint && pending.length > 0)
    out.push(
      `after reviewing, accept with: ${['mcp-warden', 'pins', 'accept', '--config', options.configFile].map(shellQuote).join(' ')} ` +
        pending.map((r) => shellQuote(toolSelector(r.server, r.tool))).join(' '),
    );
  return `${out.join('\n')}\n`;
}

/** A line of a definition diff, red when it shows what was pinned, green when what is new. */
function paintDiffLine(line: string, paint: Palette): string {
  const text = line.trimStart();
  if (text.startsWith('- ')) return paint.red(line);
  if (text.startsWith('+ ')) return paint.green(line);
  return line;
}

/** The reviews `pins accept` would pin: changed and new tools (not the unpinnable ones). */
export function acceptable(comparison: PinComparison): PinComparison['reviews'] {
  return comparison.reviews.filter((r) => r.status.kind === 'changed' || r.status.kind === 'new');
}

/** What `pins accept` pinned, and what it could not. */
export interface Acceptance {
  readonly pinned: readonly (PinEntry & { readonly previous: ToolPin | undefined })[];
  readonly unpinnable: readonly string[];
}

/**
 * `mcp-warden pins accept`: pins the current definition of every compared tool that does not
 * match its pin, replacing the old pin, in one atomic write merged with the file as it is now.
 */
export function acceptPins(
  comparison: PinComparison,
  settings: Pick<PinsConfig, 'file'>,
  now = new Date(),
): Acceptance {
  const pending = acceptable(comparison);
  const entries = pending.map((r) => ({ server: r.server, tool: r.tool, pin: newPin(r.definition, now) }));
  const { written } =
    entries.length === 0 ? { written: [] } : addPins(settings.file, entries, { replace: true });
  const previous = new Map(pending.map((r) => [`${r.server}/${r.tool}`, r.pin]));
  return {
    pinned: written.map((entry) => ({ ...entry, previous: previous.get(`${entry.server}/${entry.tool}`) })),
    unpinnable: comparison.reviews
      .filter((r) => r.status.kind === 'unpinnable')
      .map((r) => toolSelector(r.server, r.tool)),
  };
}

export function formatAcceptance(acceptance: Acceptance, file: string): string {
  const out = acceptance.pinned.map(
    ({ server, tool, pin, previous }) =>
      `pinned ${toolSelector(server, tool)} (sha256 ${short(pin.sha256)}${previous === undefined ? ', new' : `, was ${short(previous.sha256)}`})`,
  );
  for (const name of acceptance.unpinnable) out.push(`not pinned: ${name} nests too deeply to pin`);
  out.push(
    acceptance.pinned.length === 0
      ? 'nothing to accept'
      : `${plural(acceptance.pinned.length, 'tool')} pinned in ${file}`,
  );
  return `${out.join('\n')}\n`;
}

/** `mcp-warden pins list`: what the pins file holds, from the file alone. */
export function formatPinList(pins: PinSet, file: string): string {
  const rows: string[][] = [];
  for (const server of [...pins.keys()].sort())
    for (const [tool, pin] of [...pins.get(server)!].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      rows.push([server, tool, pin.pinnedAt, short(pin.sha256)]);
  if (rows.length === 0) return `no pins in ${file}\n`;
  const header = ['SERVER', 'TOOL', 'PINNED', 'SHA256'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return `${[line(header), ...rows.map(line), `${plural(rows.length, 'pin')} in ${file}`].join('\n')}\n`;
}

/** The first 12 hex digits of a hash: enough to tell pins apart by eye. */
function short(sha256: string): string {
  return sha256.slice(0, 12);
}
