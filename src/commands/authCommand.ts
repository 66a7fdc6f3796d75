/** `mcp-warden auth login|status|logout`: signing in to HTTP servers that ask for OAuth. */
import type { HttpServerConfig, WardenConfig } from '../config/types.js';
import type { Redactor } from '../features/audit/redact.js';
import type { SignedIn } from '../core/upstreams/signIn.js';
import type {
  ServerOAuth,
  SignInStatus,
  UpstreamAuth,
  UpstreamAuthEvent,
} from '../features/upstreamAuth/index.js';
import { didYouMean } from '../lib/didYouMean.js';
import { openCommandAudit, type CommandAudit } from './commandAudit.js';
import { loadConfigFile } from './loading.js';
import {
  closeLogger,
  CommandError,
  noMore,
  print,
  UsageError,
  warningLines,
  type CommandInput,
} from './support.js';

const USAGE = 'usage: mcp-warden auth login|status|logout [SERVER] --config FILE';

export async function runAuth({ values, args }: CommandInput): Promise<number | undefined> {
  const [sub, ...rest] = args;
  if (sub !== 'login' && sub !== 'status' && sub !== 'logout') throw new UsageError(USAGE);
  const { config, redactor, warnings } = await loadConfigFile(values.config, { badServers: 'mark-failed' });
  process.stderr.write(warningLines(warnings));
  const session = await authSession(config, redactor);
  try {
    if (sub === 'status') {
      noMore(rest);
      return await status(session, values.json === true);
    }
    const [name, ...more] = rest;
    noMore(more);
    if (name === undefined) throw new UsageError(`auth ${sub} needs the name of a server`);
    const server = httpServer(config, name);
    return sub === 'login' ? await login(session, server) : await logout(session, server);
  } finally {
    await session.close();
  }
}

interface AuthSession {
  readonly auth: UpstreamAuth;
  readonly servers: readonly HttpServerConfig[];
  close(): Promise<void>;
}

/** The OAuth clients of the config's servers, their secrets in the credential store, audited. */
async function authSession(config: WardenConfig, redactor: Redactor): Promise<AuthSession> {
  const [{ createUpstreamAuth, signsIn }, { openCredentialStore }, { createLogger }, { osPrincipal }] =
    await Promise.all([
      import('../features/upstreamAuth/index.js'),
      import('../lib/credentials/index.js'),
      import('../core/logger.js'),
      import('../core/principal.js'),
    ]);
  const logger = createLogger({ level: 'warn' });
  const store = await openCredentialStore({ logger });
  const audit: CommandAudit | undefined =
    config.audit === undefined ? undefined : await openCommandAudit(config, config.audit, redactor);
  const principal = osPrincipal();
  const record = (event: UpstreamAuthEvent) =>
    audit?.log.append({ ...event, session: audit.session, principal });
  return {
    auth: createUpstreamAuth({ store: () => Promise.resolve(store), logger, record }),
    servers: config.servers.filter(signsIn),
    close: async () => {
      const failure = await audit?.close();
      if (failure !== undefined)
        process.stderr.write(`mcp-warden: the audit log could not record this: ${failure.message}\n`);
      await closeLogger(logger);
    },
  };
}

/** The HTTP server entry named `name`, or an error naming the ones there are. */
function httpServer(config: WardenConfig, name: string): HttpServerConfig {
  const server = config.servers.find((s) => s.name === name);
  if (server?.transport === 'http') return server;
  const names = config.servers.filter((s) => s.transport === 'http').map((s) => s.name);
  if (server !== undefined)
    throw new CommandError(`server "${name}" in ${config.file} is a stdio server: only HTTP servers sign in`);
  const hint = didYouMean(name, names);
  throw new CommandError(
    `no server "${name}" in ${config.file}` +
      (hint !== undefined ? ` (did you mean "${hint}"?)` : '') +
      (names.length > 0 ? `; its HTTP servers: ${names.join(', ')}` : '; it has no HTTP servers'),
  );
}

/**
 * Signs in, then asks the server whether it takes the token: one that answers 403
 * `insufficient_scope` gets one more sign-in asking for the scope it names (a step-up), and
 * if the token still falls short, the command says which scope is missing.
 */
async function login(session: AuthSession, server: HttpServerConfig): Promise<number> {
  const client = session.auth.client(server);
  let signedIn = await signInOnce(server, client);
  // A server that cannot be reached now is not the sign-in's failure: the gateway will see.
  let missing = await client.missingScope(undefined).catch(() => undefined);
  if (missing === undefined) return printSignedIn(server, signedIn);
  if (missing !== '') {
    await print(
      `${server.name} asks for more access (scope "${missing}") than was granted; signing in again for it\n`,
    );
    signedIn = await signInOnce(server, client);
    missing = await client.missingScope(undefined).catch(() => undefined);
    if (missing === undefined) return printSignedIn(server, signedIn);
  }
  const granted = signedIn.scopes.length > 0 ? ` (granted: ${signedIn.scopes.join(' ')})` : '';
  throw new CommandError(
    `signed in to ${server.name}, but it refuses the token for want of scope` +
      (missing === '' ? ' (it names none)' : ` "${missing}"`) +
      `${granted}: the authorization server did not grant it; ask its administrator, or add it to oauth.scopes`,
    1,
  );
}

async function printSignedIn(server: HttpServerConfig, signedIn: SignedIn): Promise<number> {
  await print(
    `Signed in to ${server.name}${signedIn.subject !== undefined ? ` as ${signedIn.subject}` : ''}` +
      (signedIn.scopes.length > 0 ? ` (scopes: ${signedIn.scopes.join(' ')})` : '') +
      '\n',
  );
  return 0;
}

/** One browser round trip; resolves once the tokens are stored. */
async function signInOnce(server: HttpServerConfig, client: ServerOAuth): Promise<SignedIn> {
  const { openBrowser } = await import('../features/upstreamAuth/index.js');
  let flow;
  try {
    flow = await client.begin(undefined);
  } catch (error) {
    throw new CommandError(`cannot sign in to ${server.name}: ${(error as Error).message}`, 1);
  }
  await print(`Sign in to ${server.name} in your browser:\n  ${flow.url}\n`);
  if (!(await openBrowser(flow.url)))
    process.stderr.write('mcp-warden: could not open a browser; open the address above yourself\n');
  const cancel = () => flow.cancel('interrupted');
  process.once('SIGINT', cancel);
  try {
    return await flow.completed;
  } catch (error) {
    throw new CommandError(`signing in to ${server.name} failed: ${(error as Error).message}`, 1);
  } finally {
    process.off('SIGINT', cancel);
  }
}

async function logout(session: AuthSession, server: HttpServerConfig): Promise<number> {
  const { signedIn, revoked } = await session.auth.client(server).logout(undefined);
  await print(
    !signedIn
      ? `Not signed in to ${server.name}: nothing to forget\n`
      : `Signed out of ${server.name}: tokens forgotten` +
          (revoked ? ' and revoked at the authorization server\n' : ' (the server offers no revocation)\n'),
  );
  return 0;
}

async function status(session: AuthSession, json: boolean): Promise<number> {
  const states = await Promise.all(session.servers.map((s) => session.auth.client(s).status(undefined)));
  if (json) {
    await print(`${JSON.stringify(states.map(jsonOf), null, 2)}\n`);
    return 0;
  }
  if (states.length === 0) {
    await print('No HTTP servers in this config.\n');
    return 0;
  }
  await print(states.map(lineOf).join(''));
  return 0;
}

function jsonOf(state: SignInStatus): Record<string, unknown> {
  return {
    server: state.server,
    signedIn: state.signedIn,
    ...(state.subject !== undefined && { subject: state.subject }),
    scopes: state.scopes,
    ...(state.expiresAt !== undefined && { expires: new Date(state.expiresAt).toISOString() }),
    refreshable: state.refreshable,
    ...(state.authorizationServer !== undefined && { authorizationServer: state.authorizationServer }),
  };
}

function lineOf(state: SignInStatus): string {
  if (!state.signedIn) return `${state.server}: not signed in\n`;
  const parts = [
    state.subject !== undefined ? `signed in as ${state.subject}` : 'signed in',
    state.scopes.length > 0 ? `scopes: ${state.scopes.join(' ')}` : undefined,
    state.expiresAt !== undefined
      ? `${state.expiresAt > Date.now() ? 'expires' : 'expired'} ${new Date(state.expiresAt).toISOString()}`
      : undefined,
    state.refreshable ? 'refreshable' : 'not refreshable',
  ];
  return `${state.server}: ${parts.filter((p) => p !== undefined).join(', ')}\n`;
}
