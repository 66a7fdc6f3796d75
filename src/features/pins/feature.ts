import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { PinsConfig, WardenConfig } from '../../config/types.js';
import type { Feature } from '../../core/routing/feature.js';
import type { Logger } from '../../core/logger.js';
import { watchFiles } from '../../lib/watchFiles.js';
import { readPinFile, type PinSet } from './pinFile.js';
import { PinGuard, type PinEvent } from './pinGuard.js';
import { createPinStage } from './stage.js';

export interface PinsDeps {
  readonly logger: Logger;
  /** Writes a pin record to the audit trail (the gateway adds its session). */
  readonly record: (event: PinEvent) => void;
  /** The pins file as read at start; absent: read here. */
  readonly initial?: { readonly pins: PinSet; readonly text: string | undefined };
}

/**
 * Pinning tool definitions: a tool whose definition changed since it was pinned (or, under
 * `onNew: block`, one with no pin yet) is left out of the host's list and its calls are refused,
 * until the change is accepted in the pins file, which is watched while serving.
 */
export function createPins(
  config: WardenConfig & { readonly pins: PinsConfig },
  deps: PinsDeps,
): Feature & { readonly guard: PinGuard } {
  const guard = new PinGuard({
    settings: config.pins,
    configFile: config.file,
    servers: config.servers,
    initial: deps.initial ?? readPinFile(config.pins.file),
    logger: deps.logger,
    record: deps.record,
  });
  return {
    guard,
    stage: { name: 'pins', run: createPinStage({ refusal: guard.refusal.bind(guard) }) },
    visible: (listed) => listed.list !== 'tools' || !guard.isBlocked(listed.server, listed.item.name),
    serversChanged: (servers) => guard.serversChanged(servers),
    // Before the catalog is rebuilt, so a changed tool is never listed, not even for a moment.
    onListsChanged: (upstream, kinds) => {
      if (kinds.includes('tools')) guard.review(upstream);
    },
    watch: ({ upstreams, relist }) =>
      watchPinsFile(config.pins.file, {
        // An accepted (or edited) pin: review every upstream's tools again; a tool that matches
        // its pin now is listed again, and the host is told the list changed.
        onChange: () => {
          if (!guard.reload()) return;
          for (const upstream of upstreams()) guard.review(upstream);
          relist();
        },
        onError: (message) => deps.logger.error(message),
      }),
  };
}

/**
 * Watches the pins file for acceptances made while serving (`mcp-warden pins accept`). Its folder
 * is created first: the file itself appears only when the first pin is written, and a folder
 * that does not exist cannot be watched.
 */
function watchPinsFile(file: string, handlers: { onChange: () => void; onError: (message: string) => void }) {
  try {
    mkdirSync(path.dirname(file), { recursive: true });
  } catch {
    // Watching reports it.
  }
  return watchFiles({ files: [file], what: 'pins file changes', ...handlers });
}
