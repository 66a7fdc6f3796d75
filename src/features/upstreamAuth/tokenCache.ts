import { readJson, writeJson, type SecretStore, type TokenRecord } from './records.js';

/** How long a sign-in read from the store is used before the store is asked again. */
export const TOKEN_CACHE_MS = 5_000;

interface Held {
  readonly record: Promise<TokenRecord | undefined>;
  /** When it was read or written (the clock `now` gives). */
  readonly at: number;
}

/**
 * The sign-ins of one server in memory, in front of the credential store: once a server has
 * asked for a token, every request to it needs one, and reading the OS store (a D-Bus round
 * trip, a keychain lookup) or the file store on each is the hot path's slowest step. Writes and
 * deletions go through here, so this process's own refreshes, sign-ins and sign-outs keep it
 * true at once. What another process changes in the store (a sign-in or a sign-out from the
 * CLI, another gateway's refresh) is seen within `TOKEN_CACHE_MS`, and at once where it matters
 * most: before a refresh (another process may have rotated the refresh token already) and when
 * the server refuses the token held here.
 */
export class TokenCache {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly store: () => Promise<SecretStore>,
    private readonly now: () => number = Date.now,
  ) {}

  /** The record under `account`, from memory while it is recent enough. */
  read(account: string): Promise<TokenRecord | undefined> {
    const held = this.held.get(account);
    if (held !== undefined && this.now() - held.at < TOKEN_CACHE_MS) return held.record;
    return this.fresh(account);
  }

  /** The record under `account` as the store holds it now; remembered from here on. */
  fresh(account: string): Promise<TokenRecord | undefined> {
    const record = this.store().then((store) => readJson<TokenRecord>(store, account));
    const held = { record, at: this.now() };
    this.held.set(account, held);
    // A store that could not be read is asked again next time.
    record.catch(() => {
      if (this.held.get(account) === held) this.held.delete(account);
    });
    return record;
  }

  async write(account: string, record: TokenRecord): Promise<void> {
    this.held.delete(account);
    await writeJson(await this.store(), account, record);
    this.held.set(account, { record: Promise.resolve(record), at: this.now() });
  }

  /** Runs `work` on `account` while no other process sharing the store does (see its `exclusive`). */
  async exclusive<T>(account: string, work: () => Promise<T>): Promise<T> {
    const store = await this.store();
    return store.exclusive === undefined ? work() : store.exclusive(account, work);
  }

  async delete(account: string): Promise<void> {
    this.held.delete(account);
    await (await this.store()).delete(account);
    this.held.delete(account);
  }
}
