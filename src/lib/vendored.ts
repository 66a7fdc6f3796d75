/**
 * The packages the build bundles beside the chunks, each set as one file with V8's code cache
 * (scripts/bundleVendor.mjs says which and why): ajv with ajv-formats, and yaml. The built
 * gateway loads them from there; tsc's unbundled output and the sources load the installed
 * packages, as does the bundle when a file is missing.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { requireGenerated } from './generatedCode.js';

export type VendorBundle = 'ajv' | 'yaml';

/** Whether this module runs from the bundle (its chunks are `.cjs`), beside the vendor folder. */
const BUNDLED = import.meta.url.endsWith('.cjs');

/** Each bundle once loaded; null when there is none to load. */
const loaded = new Map<VendorBundle, unknown>();

/**
 * The exports of bundle `name`, loaded on first use; null when not running from the bundle or
 * the file is missing, and the caller then requires the installed package.
 */
export function vendored<T>(name: VendorBundle): T | null {
  if (!BUNDLED) return null;
  let exports = loaded.get(name);
  if (exports === undefined) {
    const file = fileURLToPath(new URL(`./vendor/${name}.cjs`, import.meta.url));
    exports = existsSync(file) ? requireGenerated(file) : null;
    loaded.set(name, exports);
  }
  return exports as T | null;
}

/** Whether this process loads the bundled packages (it runs from the bundle), each file there or not. */
export function runsVendored(): boolean {
  return BUNDLED;
}
