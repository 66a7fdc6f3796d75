/**
 * `${keychain:NAME}`: a secret the config names but does not hold. Its value lives in the
 * credential store (the OS one, or the user-only fallback file) under the account
 * `secret:NAME`, put there with `mcp-warden secret set NAME`.
 *
 * Reading the store is asynchronous and interpolation is not, so the loader first finds every
 * name the text refers to, reads them all, and hands interpolation the values it found.
 */
import type { CredentialStore } from '../lib/credentials/index.js';

/** Where interpolate.ts looks up `${keychain:NAME}`. */
export type KeychainValues =
  | {
      /** The secrets found, by NAME; a referenced name that is missing is not in the map. */
      readonly values: ReadonlyMap<string, string>;
      /** Where they were looked up, for messages ("Secret Service", a file path). */
      readonly where: string;
    }
  | {
      /** Why the store could not be read: every reference is then a problem saying so. */
      readonly error: string;
    };

export const KEYCHAIN_PREFIX = 'keychain:';

/** The account a secret NAME is stored under in the credential store. */
export const secretAccount = (name: string): string => `secret:${name}`;
export const SECRET_ACCOUNT_PREFIX = 'secret:';

/** A secret's name: what a shell and a YAML file can both carry without quoting. */
export const SECRET_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/**
 * The names of `${keychain:NAME}` references in a config's text, in order, each once. A
 * reference in a comment is found too: reading a secret nothing uses costs only the lookup.
 */
export function keychainReferences(text: string): string[] {
  const names = new Set<string>();
  for (const match of text.matchAll(/(\$?)\$\{keychain:([^}]*)\}/g)) {
    // `$${` is a literal `${`, not a reference.
    if (match[1] === '$') continue;
    const name = match[2]!;
    if (SECRET_NAME.test(name)) names.add(name);
  }
  return [...names];
}

/** Reads each name from the store; a store that cannot be opened or read is an error for them all. */
export async function readKeychainValues(
  names: readonly string[],
  open: () => Promise<CredentialStore>,
): Promise<KeychainValues> {
  try {
    const store = await open();
    const values = new Map<string, string>();
    for (const name of names) {
      const value = await store.get(secretAccount(name));
      if (value !== undefined) values.set(name, value);
    }
    return { values, where: store.where };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

/** What `${keychain:BODY}` expands to, or the problem to report at its key. */
export function resolveKeychain(
  body: string,
  keychain: KeychainValues | undefined,
): { value: string } | { problem: string } {
  const name = body.slice(KEYCHAIN_PREFIX.length);
  if (!SECRET_NAME.test(name))
    return {
      problem: `invalid secret reference "\${${body}}": a secret's name is letters, digits, "_", "." and "-" (no default may follow it)`,
    };
  if (keychain === undefined)
    return { problem: `\${${body}} cannot be read here: this config was read without the credential store` };
  if ('error' in keychain)
    return { problem: `\${${body}} cannot be read: the credential store cannot be used (${keychain.error})` };
  const value = keychain.values.get(name);
  if (value === undefined)
    return {
      problem: `secret "${name}" is not in the credential store (${keychain.where}); store it with: mcp-warden secret set ${name}`,
    };
  return { value };
}
