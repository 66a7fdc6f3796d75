import { randomUUID } from 'node:crypto';
import { describeError } from '../../lib/describeError.js';
import { MethodNotFoundError, SignInRequiredError, UpstreamUnavailableError } from '../errors.js';
import type { UpstreamSignInAttemptEvent } from '../events.js';
import type { Logger } from '../logger.js';
import type { RoutedMessage } from '../pipeline/types.js';
import type { Principal } from '../principal.js';
import { Outcome } from '../rpc/outcome.js';
import type { SignedIn, SignInFlow, UpstreamSignIn } from '../upstreams/signIn.js';
import type { Upstream } from '../upstreams/upstream.js';

/** What a sign-in record says besides who and when (the gateway adds session and principal). */
export type SignInRecord = Omit<UpstreamSignInAttemptEvent, 'session' | 'principal'>;

export interface AuthorizeOptions {
  /** The upstream of that name as the connection that asks sees it (its principal's own, if any). */
  readonly upstream: (server: string) => Upstream | undefined;
  /**
   * Whose sign-in it is: the principal of a connection that has its own connection to the
   * server; undefined for the local user (no listener).
   */
  readonly principal: Principal | undefined;
  /**
   * Records the sign-in's start, and its failure, for the principal who signs in (the audit
   * trail); its success is recorded by the sign-in itself, which knows the scopes granted.
   */
  readonly record?: (event: SignInRecord, principal: Principal | undefined) => void;
  readonly logger: Logger;
}

/**
 * How long a sign-in started for a host that cannot be asked (the user opens the URL
 * themselves) may take before it is given up: the call that started it has long been answered.
 */
export const UNASKED_SIGN_IN_MS = 10 * 60_000;

/** How the host's user answered the question to open the sign-in page. */
type Asked = 'accept' | 'decline' | 'cancel' | 'unasked';

/**
 * The pipeline's terminal for a sign-in (`kind: authorize`): asks the host's user to open the
 * server's sign-in page (URL-mode elicitation, as a request of its own to a 2025-11-25 host and
 * through the input-required round trip to a 2026-07-28 one), waits for the sign-in to complete
 * (within the call's time limit; a cancelled call gives it up), then has the server connect at
 * once, so its tools replace `authorize`. A host that cannot be asked gets the URL and the
 * command to run in the result, and the sign-in goes on without the call.
 */
export function createAuthorize(options: AuthorizeOptions): (message: RoutedMessage) => Promise<Outcome> {
  return async function authorize(message: RoutedMessage): Promise<Outcome> {
    const { server } = message;
    const upstream = options.upstream(server);
    const signIn = upstream?.signIn;
    if (upstream === undefined || signIn === undefined)
      throw new UpstreamUnavailableError(server, 'it has no sign-in');
    // Someone may have signed in meanwhile elsewhere (`auth login` in a terminal): try first.
    const now = upstream.state === 'needs-sign-in' ? await upstream.retryNow() : upstream.state;
    if (now === 'ready') return text(alreadySignedIn(server));
    if (upstream.state !== 'needs-sign-in')
      throw new UpstreamUnavailableError(server, `it is ${upstream.state}; try again shortly`);
    const record = (event: Omit<SignInRecord, 'server'>) =>
      options.record?.({ ...event, server }, message.principal);
    const flow = await signIn.begin(options.principal);
    record({ type: 'upstream_sign_in_start' });
    const elicitationId = randomUUID();
    let cancelled = false;
    const giveUp = (why: string) => {
      if (!cancelled) flow.cancel(why);
      cancelled = true;
    };
    const stopListening = message.signal.onCancel((reason) => giveUp(reason.message));
    let failed = (error: unknown) => record({ type: 'upstream_sign_in_failed', error: describeError(error) });
    try {
      const asked = await askToOpen(message, signIn, flow, elicitationId);
      if (asked === 'unasked') {
        finishUnasked(flow, upstream, record, options.logger);
        failed = () => {};
        return text(openYourself(server, signIn, flow.url));
      }
      if (asked !== 'accept') {
        const why = `the user ${asked === 'decline' ? 'declined' : 'cancelled'} the sign-in`;
        giveUp(why);
        throw new SignInRequiredError(server, `${why}; call ${message.exposedName} again to sign in`);
      }
      const signedIn = await flow.completed.catch((error: unknown) => {
        throw new SignInRequiredError(server, `the sign-in did not complete: ${describeError(error)}`, {
          cause: error,
        });
      });
      failed = () => {};
      const state = await upstream.retryNow();
      message.host?.notify('notifications/elicitation/complete', { elicitationId });
      return text(signedInText(upstream, signedIn, state === 'ready'));
    } catch (error) {
      failed(error);
      giveUp(describeError(error));
      throw error;
    } finally {
      stopListening();
    }
  };
}

/**
 * Asks the host that sent the call to have its user open `flow.url`: 'unasked' when it declared
 * no URL-mode elicitation (the question is refused before it is sent).
 */
async function askToOpen(
  message: RoutedMessage,
  signIn: UpstreamSignIn,
  flow: SignInFlow,
  elicitationId: string,
): Promise<Asked> {
  const host = message.host;
  const origin = { hostRequest: message.signal };
  if (host === undefined || !host.can('elicitation', origin)) return 'unasked';
  const params = {
    mode: 'url',
    message: `Sign in to ${signIn.describe()}`,
    url: flow.url,
    elicitationId,
  };
  try {
    const outcome = await host.ask('elicitation/create', params, { signal: message.signal }, origin);
    const action = (outcome.result as { action?: unknown }).action;
    return action === 'accept' ? 'accept' : action === 'decline' ? 'decline' : 'cancel';
  } catch (error) {
    if (error instanceof MethodNotFoundError) return 'unasked';
    throw error;
  }
}

/** A sign-in the user completes on their own: the server connects when it does, or it is given up. */
function finishUnasked(
  flow: SignInFlow,
  upstream: Upstream,
  record: (event: Omit<SignInRecord, 'server'>) => void,
  logger: Logger,
): void {
  const timer = setTimeout(
    () => flow.cancel(`nobody completed it within ${UNASKED_SIGN_IN_MS / 60_000} minutes`),
    UNASKED_SIGN_IN_MS,
  ).unref();
  flow.completed.then(
    () => {
      clearTimeout(timer);
      void upstream.retryNow();
    },
    (error: unknown) => {
      clearTimeout(timer);
      record({ type: 'upstream_sign_in_failed', error: describeError(error) });
      logger.warn(`sign-in to ${upstream.name} did not complete: ${describeError(error)}`);
    },
  );
}

function alreadySignedIn(server: string): string {
  return `Already signed in to server "${server}": its own tools are listed (list the tools again if you do not see them).`;
}

function openYourself(server: string, signIn: UpstreamSignIn, url: string): string {
  return (
    `Server "${server}" needs you to sign in (${signIn.describe()}). This host cannot open the ` +
    `sign-in page itself. Open this URL in a browser and sign in:\n\n${url}\n\n` +
    `or run \`mcp-warden auth login ${server}\` in a terminal. Once you have signed in, the ` +
    `server's tools are listed in place of its authorize tool.`
  );
}

function signedInText(upstream: Upstream, signedIn: SignedIn, connected: boolean): string {
  const as = signedIn.subject === undefined ? '' : ` as ${signedIn.subject}`;
  const scopes = signedIn.scopes.length === 0 ? '' : ` (scopes: ${signedIn.scopes.join(' ')})`;
  const head = `Signed in to server "${upstream.name}"${as}${scopes}.`;
  if (!connected)
    return `${head} It did not connect yet: ${upstream.lastError ?? 'unknown error'}; try again shortly.`;
  return `${head} Its ${upstream.tools.length} tools are now listed in place of its authorize tool.`;
}

function text(message: string): Outcome {
  return Outcome.of({ content: [{ type: 'text', text: message }] });
}
