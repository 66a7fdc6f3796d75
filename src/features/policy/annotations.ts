/**
 * How policy rules read a tool's annotations.
 *
 * The MCP spec (2025-06-18, "Tool annotations") says
 * annotations are hints, to be treated as untrusted unless they come from a trusted server. A
 * rule that relaxes checks because a tool says it is read-only must therefore never relax them
 * for a server the user has not marked `trusted: true`: for those, every hint reads as its most
 * cautious value, whatever the server claims.
 */
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { HINT_NAMES, type HintName } from './types.js';

/** The spec's defaults, which are also the most cautious values. */
export const CAUTIOUS_HINTS: Readonly<Record<HintName, boolean>> = Object.freeze({
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
});

/** Where a hint's value comes from, for explanations. */
export type HintOrigin =
  /** The server said so, and it is trusted. */
  | 'server'
  /** The trusted server left it out (or sent something other than true/false): the spec's default. */
  | 'spec default'
  /** The trusted server marked the tool read-only and left this hint out. */
  | 'read-only tool'
  /** The server is not trusted: the most cautious value, whatever it said. */
  | 'untrusted server';

export interface HintReading {
  readonly value: boolean;
  readonly from: HintOrigin;
}

export type AnnotationReading = Readonly<Record<HintName, HintReading>>;

/**
 * The value each hint has for policy rules.
 *
 * For a trusted server, a hint it leaves out reads as the spec's default, except on a tool it
 * marks `readOnlyHint: true`: the spec says `destructiveHint` and `idempotentHint` are meaningful
 * only when `readOnlyHint` is false, and a tool that modifies nothing destroys nothing and can be
 * repeated, so those read as false and true. (The reference filesystem server marks its read
 * tools with `readOnlyHint: true` alone; the literal defaults would make them "destructive".) A
 * value the server does state always wins.
 */
export function readAnnotations(
  annotations: ToolAnnotations | undefined,
  trusted: boolean,
): AnnotationReading {
  const reading = {} as Record<HintName, HintReading>;
  if (!trusted) {
    for (const hint of HINT_NAMES) reading[hint] = { value: CAUTIOUS_HINTS[hint], from: 'untrusted server' };
    return reading;
  }
  // Upstream data, not checked against the SDK's schema on this path: only booleans count.
  const stated = (hint: HintName): boolean | undefined => {
    const value: unknown = annotations?.[hint];
    return typeof value === 'boolean' ? value : undefined;
  };
  const readOnly = stated('readOnlyHint') === true;
  for (const hint of HINT_NAMES) {
    const value = stated(hint);
    if (value !== undefined) reading[hint] = { value, from: 'server' };
    else if (readOnly && hint === 'destructiveHint') reading[hint] = { value: false, from: 'read-only tool' };
    else if (readOnly && hint === 'idempotentHint') reading[hint] = { value: true, from: 'read-only tool' };
    else reading[hint] = { value: CAUTIOUS_HINTS[hint], from: 'spec default' };
  }
  return reading;
}
