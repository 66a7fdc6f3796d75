import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { PinsConfig } from '../../config/types.js';
import { pinOf, type PinSet, type ToolPin } from './pinFile.js';
import {
  changedFields,
  definitionHash,
  pinnedDefinition,
  tooDeepToPin,
  type PinnedDefinition,
  type PinnedField,
} from './toolDefinitionHash.js';

/**
 * How a tool as listed now compares with its pin:
 * - `unchanged`: same hash;
 * - `new`: no pin for it yet;
 * - `changed`: a pin with another hash; `fields` says which pinned fields differ;
 * - `unpinnable`: nested too deeply to hash faithfully (toolDefinitionHash.ts `tooDeepToPin`).
 */
export type PinStatus =
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'new' }
  | { readonly kind: 'changed'; readonly fields: readonly PinnedField[] }
  | { readonly kind: 'unpinnable' };

/** One listed tool held against its pin. */
export interface ToolReview {
  /** The upstream's own tool name. */
  readonly tool: string;
  readonly definition: PinnedDefinition;
  readonly sha256: string;
  readonly pin: ToolPin | undefined;
  readonly status: PinStatus;
}

export function reviewTool(tool: Tool, pin: ToolPin | undefined): ToolReview {
  const definition = pinnedDefinition(tool);
  const sha256 = definitionHash(definition);
  const base = { tool: tool.name, definition, sha256, pin };
  if (tooDeepToPin(definition)) return { ...base, status: { kind: 'unpinnable' } };
  if (pin === undefined) return { ...base, status: { kind: 'new' } };
  if (pin.sha256 === sha256) return { ...base, status: { kind: 'unchanged' } };
  return { ...base, status: { kind: 'changed', fields: changedFields(pin.definition, definition) } };
}

/**
 * What the gateway does with a reviewed tool:
 * - `serve`: nothing to do;
 * - `pin`: pin it now, then serve it (first sight under `onNew: pin`);
 * - `warn`: serve it, and warn that it changed (`onChange: warn`);
 * - `block`: leave it out of `tools/list` and refuse its calls until it is accepted.
 * A definition that cannot be pinned faithfully is blocked whatever the settings: serving it
 * would let a change go unseen.
 */
export type PinAction = 'serve' | 'pin' | 'warn' | 'block';

export function pinAction(status: PinStatus, settings: Pick<PinsConfig, 'onChange' | 'onNew'>): PinAction {
  switch (status.kind) {
    case 'unchanged':
      return 'serve';
    case 'new':
      return settings.onNew === 'pin' ? 'pin' : 'block';
    case 'changed':
      return settings.onChange;
    case 'unpinnable':
      return 'block';
  }
}

/**
 * Whether the gateway would keep `tool` from the host because of its pin, judged from the pins
 * file alone and without writing it: what `mcp-warden tools` needs to show the list a host would
 * get. A tool the gateway would pin on first sight (`onNew: pin`) is served, so it counts as
 * shown.
 */
export function blockedByPins(
  pins: PinSet,
  settings: Pick<PinsConfig, 'onChange' | 'onNew'>,
): (server: string, tool: Tool) => boolean {
  // The catalog is rebuilt each time an upstream comes up and asks again about the same tools:
  // each listed definition is hashed once.
  const judged = new WeakMap<Tool, boolean>();
  return (server, tool) => {
    let blocked = judged.get(tool);
    if (blocked === undefined) {
      blocked = pinAction(reviewTool(tool, pinOf(pins, server, tool.name)).status, settings) === 'block';
      judged.set(tool, blocked);
    }
    return blocked;
  };
}
