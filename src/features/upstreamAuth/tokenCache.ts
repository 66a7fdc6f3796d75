import { readJson, writeJson, type SecretStore, type TokenRecord } from './records.js';

/**
 * The sign-ins of one server in memory, in front of the credential store: once a server has
 * asked for a token, every request to it needs one, and reading the OS store (a D-Bus round
 * trip, a keychain lookup) or the file store on each is the hot path's slowest step. Writes and
 * deletions go through here, so this process's own refreshes, sign-ins and sign-outs keep it
 * true; what another process changes in the store is read afresh where it matters: before a
 * refresh (another process may have rotated the refresh token already) and when the server
 * refuses the token held here.
 */
export class TokenCache {
  private readonly records = new Map<string, Promise<TokenRecord | undefined>>();

  constructor(private readonly store: () => Promise<SecretStore>) {}

  /** The record under `account`, from memory once it has been read. */
  read(account: string): Promise<TokenRecord | undefined> {
    return this.records.get(account) ?? this.fresh(account);
  }

  /** The record under `account` as the store holds it now; remembered from here on. */
  fresh(account: string): Promise<TokenRecord | undefined> {
    const reading = this.store().then((store) => readJson<TokenRecord>(store, account));
    this.records.set(account, reading);
    // A store that could not be read is asked again next time.
    reading.catch(() => {
      if (this.records.get(account) === reading) this.records.delete(account);
    });
    return reading;
  }

  async write(account: string, record: TokenRecord): Promise<void> {
    await writeJson(await this.store(), account, record);
    this.records.set(account, Promise.resolve(record));
  }

  async delete(account: string): Promise<void> {
    this.records.delete(account);
    await (await this.store()).delete(account);
    this.records.delete(account);
  }
}
