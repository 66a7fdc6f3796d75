/**
 * `mcp-warden secret set|delete|list`: the secrets a config refers to as `${keychain:NAME}`,
 * kept in the credential store under `secret:NAME`. No command prints a secret's value.
 */
import { SECRET_ACCOUNT_PREFIX, SECRET_NAME, secretAccount } from '../config/keychain.js';
import { CredentialStoreError } from '../lib/credentials/store.js';
import { openCommandCredentials } from './loading.js';
import { CommandError, noMore, print, UsageError, type CommandInput } from './support.js';

const USAGE = 'usage: mcp-warden secret set NAME | secret delete NAME | secret list';

export async function runSecret(input: CommandInput): Promise<number> {
  try {
    return await secret(input);
  } catch (error) {
    // The store's own errors name the store or file and the fix: they are the message.
    if (error instanceof CredentialStoreError) throw new CommandError(error.message);
    throw error;
  }
}

async function secret({ args }: CommandInput): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'list') {
    noMore(rest);
    const store = await openCommandCredentials();
    const names = (await store.list(SECRET_ACCOUNT_PREFIX)).map((account) =>
      account.slice(SECRET_ACCOUNT_PREFIX.length),
    );
    process.stderr.write(`mcp-warden: ${names.length} secret(s) in ${store.where}\n`);
    await print(names.map((name) => `${name}\n`).join(''));
    return 0;
  }
  if (sub !== 'set' && sub !== 'delete') throw new UsageError(USAGE);
  const [name, ...extra] = rest;
  if (name === undefined) throw new UsageError(`secret ${sub} needs the secret's NAME\n${USAGE}`);
  noMore(extra);
  if (!SECRET_NAME.test(name))
    throw new UsageError(`"${name}" cannot name a secret: use letters, digits, "_", "." and "-"`);
  if (sub === 'delete') {
    const store = await openCommandCredentials();
    if (!(await store.delete(secretAccount(name)))) {
      process.stderr.write(`mcp-warden: there is no secret "${name}" in ${store.where}\n`);
      return 1;
    }
    process.stderr.write(`mcp-warden: deleted secret "${name}" from ${store.where}\n`);
    return 0;
  }
  const value = await readSecretValue(name);
  if (value === '') throw new CommandError(`no value given for secret "${name}"; nothing stored`);
  const store = await openCommandCredentials();
  await store.set(secretAccount(name), value);
  process.stderr.write(
    `mcp-warden: stored secret "${name}" in ${store.where}; refer to it in the config as \${keychain:${name}}\n`,
  );
  return 0;
}

/**
 * The value from stdin: typed at a terminal without being shown (Enter ends it), or everything
 * a pipe sends with its final line break taken off (`printf %s "$TOKEN" | ...` and
 * `echo "$TOKEN" | ...` store the same value).
 */
async function readSecretValue(name: string): Promise<string> {
  const input = process.stdin;
  if (input.isTTY) return readHidden(input, `Value for secret "${name}" (not shown): `);
  const chunks: Buffer[] = [];
  for await (const chunk of input) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
}

function readHidden(input: NodeJS.ReadStream, prompt: string): Promise<string> {
  process.stderr.write(prompt);
  input.setRawMode(true);
  input.setEncoding('utf8');
  input.resume();
  let value = '';
  return new Promise((resolve, reject) => {
    const finish = (error?: Error): void => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write('\n');
      if (error === undefined) resolve(value);
      else reject(error);
    };
    const onData = (text: string): void => {
      for (const character of text) {
        if (character === '\r' || character === '\n' || character === '\u0004') return finish();
        if (character === '\u0003') return finish(new CommandError('cancelled; nothing stored', 130));
        if (character === '\u007f' || character === '\b') value = value.slice(0, -1);
        else value += character;
      }
    };
    input.on('data', onData);
  });
}
