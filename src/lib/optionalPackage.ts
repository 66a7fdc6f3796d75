import { ownPackage } from './ownPackage.js';

/**
 * What a feature needs that mcp-warden does not install with itself: the packages it imports
 * only when the config turns the feature on (OpenTelemetry is most of a full install's size,
 * and most gateways never export a span). They are optional peer dependencies, so the install
 * command below is what makes them present, at the versions this release was built against.
 */
export interface OptionalNeed {
  /** What the config turned on, as the user would name it: `telemetry`, `the audit sink "siem"`. */
  readonly feature: string;
  /** Every package the feature loads, so that one command installs them all. */
  readonly packages: readonly string[];
}

/** A package an enabled feature needs is not installed; the message says how to install it. */
export class MissingPackageError extends Error {
  constructor(
    readonly packageName: string,
    readonly need: OptionalNeed,
  ) {
    super(
      `${need.feature} is configured, but the package ${packageName} is not installed ` +
        `(it is optional: mcp-warden is installed without it). Install it beside mcp-warden, ` +
        `with --global if mcp-warden was installed with --global:\n` +
        `  ${installCommand(need.packages)}`,
    );
    this.name = 'MissingPackageError';
  }
}

/**
 * Runs `load` (the feature's `import()`s) and turns "cannot find package" into a
 * `MissingPackageError` naming the package Node looked for: it may be one the feature imports,
 * or one of theirs when an install is partial. Any other failure is passed on as it is.
 */
export async function importOptional<T>(load: () => Promise<T>, need: OptionalNeed): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const missing = missingPackageOf(error);
    if (missing !== undefined) throw new MissingPackageError(missing, need);
    throw error;
  }
}

/**
 * The error starting the feature would stop with, found without loading anything: the first of
 * its packages that cannot be resolved from here (where the feature's modules import them).
 * A package that is there but broken is only found by loading it.
 */
export function missingPackage(need: OptionalNeed): MissingPackageError | undefined {
  for (const name of need.packages) {
    try {
      import.meta.resolve(name);
    } catch (error) {
      if (missingPackageOf(error) !== undefined) return new MissingPackageError(name, need);
      throw error;
    }
  }
  return undefined;
}

/** The package an import or require could not find, from Node's error; else undefined. */
export function missingPackageOf(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as NodeJS.ErrnoException).code;
  // ESM: "Cannot find package 'name' imported from ..."; CommonJS: "Cannot find module 'name/x'".
  const match =
    code === 'ERR_MODULE_NOT_FOUND'
      ? /Cannot find package '([^']+)'/.exec(error.message)
      : code === 'MODULE_NOT_FOUND'
        ? /Cannot find module '([^'./][^']*)'/.exec(error.message)
        : null;
  if (match === null) return undefined;
  const parts = match[1]!.split('/');
  return parts[0]!.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** `npm install` with each package at the range this release declares for it. */
export function installCommand(packages: readonly string[]): string {
  const ranges = peerRanges();
  return `npm install ${packages.map((name) => (ranges[name] ? `${name}@${ranges[name]}` : name)).join(' ')}`;
}

/** The optional packages' version ranges, as our package.json declares them. */
function peerRanges(): Readonly<Record<string, string>> {
  try {
    return ownPackage().peerDependencies ?? {};
  } catch {
    // Without the ranges the command still installs the packages, at their latest versions.
    return {};
  }
}
