/**
 * The shape every credential backend has, and the names they share. Secrets are strings held
 * under an account name inside the one service `mcp-warden`; callers choose the account names
 * (`secret:NAME` for `${keychain:NAME}`, one per server for sign-in tokens).
 */
export interface CredentialStore {
  /** 'keyring' (the OS credential store) or 'file' (the fallback). */
  readonly kind: 'keyring' | 'file';
  /** Where secrets live, for messages: "Secret Service", "macOS Keychain", or the file path. */
  readonly where: string;
  get(account: string): Promise<string | undefined>;
  set(account: string, secret: string): Promise<void>;
  /** True when something was stored under the account and is now gone. */
  delete(account: string): Promise<boolean>;
  /** Accounts stored under a prefix (for `auth status`, `secret list`), sorted. */
  list(prefix: string): Promise<string[]>;
  /**
   * Runs `work` on the secret `account` while no other process (sharing this store) runs work
   * on it; undefined for a store only this process uses.
   */
  exclusive?<T>(account: string, work: () => Promise<T>): Promise<T>;
}

/** The service name every secret of ours is filed under, in the OS store and in the file. */
export const CREDENTIAL_SERVICE = 'mcp-warden';

/** The part of a logger the store uses: one warning when it falls back to the file. */
export interface CredentialLogger {
  warn(message: string, meta?: Record<string, unknown>): void;
  debug?(message: string, meta?: Record<string, unknown>): void;
}

/**
 * The credential store could not be used: it is unreachable when it was asked for by name, or
 * the file is unsafe or unreadable. The message names the store or file and what to do; it never
 * holds a secret.
 */
export class CredentialStoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CredentialStoreError';
  }
}

/**
 * Account names are ours to choose, but a few shapes are kept for the store's own bookkeeping
 * (names starting with a dot), and an empty or control-character name would be unreadable in
 * `secret list` and in the OS store's own tools.
 */
export function checkAccount(account: string): void {
  // eslint-disable-next-line no-control-regex
  if (account === '' || account.startsWith('.') || /[\u0000-\u001f\u007f]/.test(account))
    throw new CredentialStoreError(
      `"${account}" cannot be used as a credential name: it must not be empty, start with "." or hold control characters`,
    );
}
