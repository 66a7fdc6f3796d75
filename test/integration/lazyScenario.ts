/** The lazy server the lazy-start tests share, in-process and through the built binary. */
import path from 'node:path';
import { FAST_GATEWAY, fixture, writeConfig } from './harness.js';

/** A config with one lazy fixture server `lz` (pins, and so its listings, in the same folder). */
export function lazyConfig(dir: string, extra: Record<string, unknown> = {}, args: string[] = []) {
  return writeConfig(
    {
      gateway: FAST_GATEWAY,
      pins: { file: './tool-pins.json' },
      servers: {
        lz: fixture(['--pid-file', path.join(dir, 'lz.pid'), ...args], {
          start: 'lazy',
          idleTimeout: '300ms',
          ...extra,
        }),
      },
    },
    dir,
  );
}
