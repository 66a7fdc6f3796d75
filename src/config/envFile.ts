/**
 * A stdio server's `envFile` (VS Code and Cursor write it): a dotenv file whose variables the
 * server's process gets. Read when the config is loaded, not when the server starts, so that the
 * frozen config holds each server's final `env` and `mcp-warden check` reports a file that cannot
 * be read. Parsed with Node's own `util.parseEnv`, the reader `node --env-file` uses, rather
 * than a dependency.
 *
 * The values are taken as written: a `${...}` in the file is not expanded. The file is data the
 * server gets, like a value written under `env` after interpolation; expanding it would make a
 * secret that happens to contain `${` an error.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import util from 'node:util';
import { osReason } from './yamlSource.js';

export interface EnvFileOptions {
  /** What a relative path is resolved against: the config file's folder. */
  readonly dir: string;
}

/** The variables of the file, or a problem to report at the `envFile` key. */
export type EnvFileResult =
  { readonly variables: Readonly<Record<string, string>> } | { readonly problem: string };

/** Reads the env file written as `written`. Never throws: every failure is a problem message. */
export function readEnvFile(written: string, options: EnvFileOptions): EnvFileResult {
  // `parseEnv` came with Node 20.12; the rest of mcp-warden runs on any Node 20.
  if (typeof util.parseEnv !== 'function') {
    return { problem: `"envFile" needs Node.js 20.12 or later, and this is ${process.version}` };
  }
  const file = path.resolve(options.dir, written);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    return { problem: `cannot read env file ${file}: ${osReason(error)}` };
  }
  // A byte-order mark (some Windows editors write one) would otherwise become part of the first name.
  const parsed = util.parseEnv(text.replace(/^\uFEFF/, ''));
  return {
    variables: Object.fromEntries(
      Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
    ),
  };
}
