import { readFileSync } from 'node:fs';

/** The fields of our own package.json that the program reads. */
export interface OwnPackage {
  readonly version: string;
  readonly peerDependencies?: Readonly<Record<string, string>>;
}

/**
 * Our own package.json. The module reading it sits one folder below the package root (the
 * bundle's entry, dist/cli.js) or two (a bundle chunk in dist/chunks/, a source file in
 * src/lib/): the bundler decides which file a module ends up in, so both places are tried.
 */
export function ownPackage(): OwnPackage {
  for (const relative of ['../package.json', '../../package.json']) {
    let text: string;
    try {
      text = readFileSync(new URL(relative, import.meta.url), 'utf8');
    } catch {
      continue;
    }
    const pkg = JSON.parse(text) as OwnPackage & { readonly name?: string };
    if (pkg.name === 'mcp-warden') return pkg;
  }
  throw new Error(`cannot find mcp-warden's package.json above ${import.meta.url}`);
}
