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
  const { where } = options;
  const entries = chunkedEntries(options);
  let queue: Promise<unknown> = Promise.resolve();

  function serial<T>(operation: string, work: () => Promise<T>): Promise<T> {
    const next = queue.then(() => guard(where, operation, work));
    queue = next.catch(() => undefined);
    return next;
  }

  return {
    kind: 'keyring',
    where,
    async get(account) {
      checkAccount(account);
      return serial('read', () => entries.read(account));
    },
    async set(account, secret) {
      checkAccount(account);
      return serial('store', async () => {
        await entries.write(account, secret);
        const names = await entries.readIndex();
        if (!names.includes(account)) await entries.writeIndex([...names, account]);
      });
    },
    async delete(account) {
      checkAccount(account);
      return serial('delete', async () => {
        const deleted = await entries.remove(account);
        const names = await entries.readIndex();
        if (names.includes(account)) await entries.writeIndex(names.filter((name) => name !== account));
        return deleted;
      });
    },
    async list(prefix) {
      return serial('list', async () =>
        (await entries.readIndex())
          .filter((account) => account.startsWith(prefix) && !account.startsWith('.'))
          .sort(),
      );
    },
  };
}

/**
 * The store's entries as whole values: a value longer than `chunkSize` is split over entries of
 * its own (`.part/<n>/<account>`), the account's entry holding a marker and their count; and
 * the index of account names.
 */
function chunkedEntries(options: KeyringStoreOptions) {
  const { module, entryOptions, chunkSize } = options;
  const entry = (account: string): AsyncEntryClass =>
    new module.AsyncEntry(CREDENTIAL_SERVICE, account, entryOptions);
  const partsOf = (head: string | null): number =>
    head === null || !head.startsWith(SPLIT_MARK) ? 0 : Number(head.slice(SPLIT_MARK.length));

  async function read(account: string): Promise<string | undefined> {
    const head = (await entry(account).getPassword()) ?? undefined;
    if (head === undefined || !head.startsWith(SPLIT_MARK)) return head;
    const parts: string[] = [];
    for (let index = 0; index < partsOf(head); index++) {
      const part = await entry(partAccount(account, index)).getPassword();
      // A part gone missing (removed by hand in the OS store's own tool) leaves no usable value.
      if (part === null) return undefined;
      parts.push(part);
    }
    return parts.join('');
  }

  async function removeParts(account: string): Promise<void> {
    const count = partsOf(await entry(account).getPassword());
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

  return {
    read,
    write,
    readIndex,
    writeIndex: (names: readonly string[]) => write(INDEX, JSON.stringify([...new Set(names)].sort())),
    async remove(account: string): Promise<boolean> {
      await removeParts(account);
      return entry(account).deleteCredential();
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
