import type { AsyncEntry as AsyncEntryClass, EntryOptions } from '@napi-rs/keyring';
import { checkAccount, CREDENTIAL_SERVICE, CredentialStoreError, type CredentialStore } from './store.js';

/** The part of `@napi-rs/keyring` we use, so tests can hand in the real module or a fake. */
export interface KeyringModule {
  readonly AsyncEntry: typeof AsyncEntryClass;
}

export interface KeyringStoreOptions {
  readonly module: KeyringModule;
  /** For messages: "Secret Service", "macOS Keychain", "Windows Credential Manager". */
  readonly where: string;
  /** Platform options for each entry (on Linux: the Secret Service, never the kernel keyring). */
  readonly entryOptions?: EntryOptions;
  /**
   * The longest value one entry holds; a longer one is split over several entries. Windows
   * Credential Manager refuses a secret over 2560 bytes (1280 UTF-16 characters), and a sign-in's
   * tokens can be longer than that.
   */
  readonly chunkSize: number;
}

/** The store's own entries start with a dot, which account names may not. */
const INDEX = '.index';
const partAccount = (account: string, index: number): string => `.part/${index}/${account}`;
/** A value split into parts is stored as this marker and the count of parts. */
const SPLIT_MARK = '\u0001mcp-warden-split:';

/**
 * The OS credential store through `@napi-rs/keyring`, every entry under the service
 * `mcp-warden`. OS stores cannot list a service's entries the same way everywhere, so the store
 * keeps an index of its account names in an entry of its own; the names are not secret, only
 * the values are. Operations from this process run one at a time (the index is read, changed
 * and written back).
 */
export function createKeyringStore(options: KeyringStoreOptions): CredentialStore {
  const { module, where, entryOptions, chunkSize } = options;
  let queue: Promise<unknown> = Promise.resolve();

  function serial<T>(work: () => Promise<T>): Promise<T> {
    const next = queue.then(work);
    queue = next.catch(() => undefined);
    return next;
  }

  function entry(account: string): AsyncEntryClass {
    return new module.AsyncEntry(CREDENTIAL_SERVICE, account, entryOptions);
  }

  async function read(account: string): Promise<string | undefined> {
    const head = (await entry(account).getPassword()) ?? undefined;
    if (head === undefined || !head.startsWith(SPLIT_MARK)) return head;
    const count = Number(head.slice(SPLIT_MARK.length));
    const parts: string[] = [];
    for (let index = 0; index < count; index++) {
      const part = await entry(partAccount(account, index)).getPassword();
      // A part gone missing (removed by hand in the OS store's own tool) leaves no usable value.
      if (part === null) return undefined;
      parts.push(part);
    }
    return parts.join('');
  }

  async function removeParts(account: string): Promise<void> {
    const head = await entry(account).getPassword();
    if (head === null || !head.startsWith(SPLIT_MARK)) return;
    const count = Number(head.slice(SPLIT_MARK.length));
    for (let index = 0; index < count; index++) await entry(partAccount(account, index)).deleteCredential();
  }

  async function write(account: string, secret: string): Promise<void> {
    await removeParts(account);
    if (secret.length <= chunkSize && !secret.startsWith(SPLIT_MARK)) {
      await entry(account).setPassword(secret);
      return;
    }
    const count = Math.ceil(secret.length / chunkSize);
    for (let index = 0; index < count; index++)
      await entry(partAccount(account, index)).setPassword(
        secret.slice(index * chunkSize, (index + 1) * chunkSize),
      );
    await entry(account).setPassword(`${SPLIT_MARK}${count}`);
  }

  async function readIndex(): Promise<string[]> {
    const text = await read(INDEX);
    if (text === undefined) return [];
    try {
      const value: unknown = JSON.parse(text);
      if (Array.isArray(value)) return value.filter((name): name is string => typeof name === 'string');
    } catch {
      // A damaged index only loses the listing: the secrets themselves are still found by name.
    }
    return [];
  }

  async function writeIndex(names: readonly string[]): Promise<void> {
    await write(INDEX, JSON.stringify([...new Set(names)].sort()));
  }

  return {
    kind: 'keyring',
    where,
    async get(account) {
      checkAccount(account);
      return serial(() => guard(where, 'read', () => read(account)));
    },
    async set(account, secret) {
      checkAccount(account);
      return serial(() =>
        guard(where, 'store', async () => {
          await write(account, secret);
          const names = await readIndex();
          if (!names.includes(account)) await writeIndex([...names, account]);
        }),
      );
    },
    async delete(account) {
      checkAccount(account);
      return serial(() =>
        guard(where, 'delete', async () => {
          await removeParts(account);
          const deleted = await entry(account).deleteCredential();
          const names = await readIndex();
          if (names.includes(account)) await writeIndex(names.filter((name) => name !== account));
          return deleted;
        }),
      );
    },
    async list(prefix) {
      return serial(() =>
        guard(where, 'list', async () =>
          (await readIndex())
            .filter((account) => account.startsWith(prefix) && !account.startsWith('.'))
            .sort(),
        ),
      );
    },
  };
}

/** The OS store's errors name the store and the operation; they never carry a secret. */
async function guard<T>(where: string, operation: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof CredentialStoreError) throw error;
    throw new CredentialStoreError(
      `the ${where} refused to ${operation} a secret: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}
