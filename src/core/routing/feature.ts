import type { ServerConfig } from '../../config/types.js';
import type { ListedItem } from '../catalog/catalogs.js';
import type { StageName } from '../pipeline/order.js';
import type { RoutedMessage, Stage } from '../pipeline/types.js';
import type { ListKind, Upstream, UpstreamLifecycleEvent } from '../upstreams/upstream.js';
import type { ToolView, ToolViewContext } from './toolView.js';

/**
 * What a feature contributes to the gateway. Each feature folder exports one factory,
 * `create<Feature>(config, deps)`, that returns this; `gateway/features.ts` folds them together
 * and is the only module that knows every feature. Every member is optional.
 */
export interface Feature {
  /** Its stage, placed by name at its position in STAGE_ORDER (core/pipeline/order.ts). */
  readonly stage?: { readonly name: StageName; readonly run: Stage };
  /**
   * False leaves a tool, prompt, resource or template out of the host's lists (it stays
   * resolvable: a request for it is decided by the stage). The gateway and `mcp-warden tools`
   * use the same fold of these.
   */
  readonly visible?: (item: ListedItem) => boolean;
  /** An upstream's lists changed; runs before the catalogs are rebuilt from them. */
  readonly onListsChanged?: (upstream: Upstream, kinds: readonly ListKind[]) => void;
  /** The gateway started serving (after its own start record): e.g. record what is in force. */
  readonly started?: () => void;
  /** Runs just before the host's connection writes what it has queued. */
  readonly beforeHostWrite?: () => void;
  /**
   * Starts watching what the feature reads from disk. `relist` rebuilds the host's tool list
   * (and tells the host) after a change that may show or hide tools. Returns how to stop.
   */
  readonly watch?: (events: FeatureEvents) => { close(): void };
  /**
   * Told as a routed message enters each stage of the pipeline (and `forward`, the terminal):
   * how an observer sees when a decision was made or a wait ended without being a stage at each
   * of those places. The stages are wrapped only when some feature has this.
   */
  readonly observeStage?: (stage: StageName | 'forward', message: RoutedMessage) => void;
  /** An upstream started, exited, restarted or failed (the records the audit trail keeps). */
  readonly onUpstreamLifecycle?: (event: UpstreamLifecycleEvent) => void;
  /**
   * The configured servers changed while serving (an edit of the config file): what the feature
   * keeps per server follows them from the next request. Every server, in config order.
   */
  readonly serversChanged?: (servers: readonly ServerConfig[]) => void;
  /**
   * What one host connection sees of the tool catalogue (search mode, profiles), when it is not
   * all of it; undefined: all of it. At most one feature has this.
   */
  readonly toolView?: (context: ToolViewContext) => ToolView | undefined;
}

export interface FeatureEvents {
  readonly upstreams: () => readonly Upstream[];
  readonly relist: () => void;
}

/** Whether every feature lets the host see an item. */
export function foldVisibility(features: readonly Feature[]): (item: ListedItem) => boolean {
  const rules = features.flatMap((f) => (f.visible === undefined ? [] : [f.visible]));
  return (item) => rules.every((visible) => visible(item));
}
