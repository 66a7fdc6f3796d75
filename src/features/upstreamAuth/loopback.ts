import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** The browser's redirect back to us, with the authorization server's answer in its query. */
export interface LoopbackRedirect {
  /** Where the authorization server sends the browser: `http://127.0.0.1:<port>/callback`. */
  readonly redirectUrl: string;
  /** The query of the first request to the callback path; rejects on timeout or cancel. */
  readonly answer: Promise<URLSearchParams>;
  /** Stops listening; a pending `answer` rejects with `reason`. */
  close(reason?: string): void;
}

export interface LoopbackOptions {
  /** How long to wait for the browser: the listener closes and `answer` rejects after it. */
  readonly timeoutMs: number;
  /** The port to try first (the one a registered client's redirect URI names); else any free one. */
  readonly preferredPort?: number;
  /** The page the browser shows once the answer arrived: what happened, in plain words. */
  readonly page: (query: URLSearchParams) => string;
}

const CALLBACK_PATH = '/callback';

/**
 * A one-shot HTTP listener on 127.0.0.1 for the authorization redirect (RFC 8252 loopback
 * redirect): it takes one answer on `/callback`, shows the browser a plain page and closes.
 * Only the loopback address is bound, so nothing off this machine can reach it.
 */
export async function listenForRedirect(options: LoopbackOptions): Promise<LoopbackRedirect> {
  let settle!: { resolve: (q: URLSearchParams) => void; reject: (e: Error) => void };
  const answer = new Promise<URLSearchParams>((resolve, reject) => (settle = { resolve, reject }));
  // Nobody may await it (a cancelled flow): the rejection is still handled.
  answer.catch(() => {});
  let done = false;
  // Loaded here, not with the module: every gateway loads the sign-in code, few ever sign in, and
  // Node's HTTP modules are the costliest it would load at start (measured: about 11 ms of CPU).
  const { createServer } = await import('node:http');
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== CALLBACK_PATH || done) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found\n');
      return;
    }
    done = true;
    response
      .writeHead(200, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' })
      .end(options.page(url.searchParams));
    settle.resolve(url.searchParams);
    stop();
  });
  const port = await listen(server, options.preferredPort).catch(() => listen(server, 0));
  const timer = setTimeout(
    () => close(`no answer from the browser within ${Math.round(options.timeoutMs / 1000)} s`),
    options.timeoutMs,
  );
  timer.unref();
  function stop(): void {
    clearTimeout(timer);
    server.close();
    server.closeAllConnections();
  }
  function close(reason = 'the sign-in was cancelled'): void {
    if (!done) settle.reject(new Error(reason));
    done = true;
    stop();
  }
  return { redirectUrl: `http://127.0.0.1:${port}${CALLBACK_PATH}`, answer, close };
}

function listen(server: Server, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const failed = (error: Error) => reject(error);
    server.once('error', failed);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', failed);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** The port of a loopback redirect URI, when it is one of ours. */
export function loopbackPort(redirectUri: string | undefined): number | undefined {
  if (redirectUri === undefined || !URL.canParse(redirectUri)) return undefined;
  const url = new URL(redirectUri);
  return url.hostname === '127.0.0.1' && url.pathname === CALLBACK_PATH && url.port !== ''
    ? Number(url.port)
    : undefined;
}
