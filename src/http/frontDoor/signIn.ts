/**
 * What the front door's endpoints share: the records a sign-in leaves between two requests
 * (kept in memory or in the replicas' store), the services every endpoint uses, and the small
 * helpers of the OAuth answers.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthConfig, FrontDoorConfig } from '../../config/types.js';
import type { HostSignInEvent } from '../../core/events.js';
import type { Logger } from '../../core/logger.js';
import type { Principal } from '../../core/principal.js';
import type { SharedStore } from '../../lib/store/sharedStore.js';
import type { ReadBody } from '../bodyReads.js';
import { sendJson } from '../replies.js';
import { keptHere, keptInStore, type Kept } from './bounded.js';
import type { IdentityProvider } from './idp.js';
import type { SigningKey } from './keys.js';

/** A sign-in record, without what the gateway's recorder adds. */
export type SignInRecord = Omit<HostSignInEvent, 'session' | 'principal'>;

/**
 * A registered host. Its client id is its registration itself, sealed with the gateway's key:
 * nothing is kept per host, so registrations cost no memory, outlive a restart and are known to
 * every replica that shares the key.
 */
export interface Client {
  /** The client id the host was given (the sealed registration). */
  readonly id: string;
  /** A short name for it in logs, audit records and tokens (from its seal). */
  readonly tag: string;
  readonly name?: string;
  readonly redirectUris: readonly string[];
}

/** A sign-in under way at the identity provider, under the state the gateway sent there. */
export interface Pending {
  readonly client: Client;
  readonly redirectUri: string;
  readonly challenge: string;
  readonly hostState?: string;
  readonly verifier: string;
  readonly nonce: string;
}

/** Who signed in, as the gateway's tokens carry it. */
export interface Subject {
  readonly sub: string;
  readonly idpIssuer: string;
  readonly claims: Readonly<Record<string, unknown>>;
}

export interface Code {
  readonly client: Client;
  readonly redirectUri: string;
  readonly challenge: string;
  readonly subject: Subject;
}

export interface Refresh {
  readonly client: Client;
  readonly subject: Subject;
  /** The sign-in's end: rotation never extends it. */
  readonly until: number;
}

/**
 * The records that carry a sign-in from one request to the next, each taken once: a state
 * answers one callback, a code buys tokens once, a refresh token is replaced when used.
 */
export interface SignInState {
  readonly pending: Kept<Pending>;
  readonly codes: Kept<Code>;
  readonly refreshTokens: Kept<Refresh>;
}

/** Sign-ins under way, codes and refresh tokens held at once, each (in memory). */
const MAX_PENDING = 1000;
const MAX_CODES = 1000;
const MAX_REFRESH_TOKENS = 10_000;

/** In `store` when replicas share one (any of them continues what another started), else here. */
export function signInState(store: SharedStore | undefined): SignInState {
  return {
    pending: store ? keptInStore(store, 'pending') : keptHere(MAX_PENDING),
    codes: store ? keptInStore(store, 'code') : keptHere(MAX_CODES),
    refreshTokens: store ? keptInStore(store, 'refresh') : keptHere(MAX_REFRESH_TOKENS),
  };
}

/** What every endpoint of the front door is given. */
export interface Door {
  readonly auth: AuthConfig;
  readonly door: FrontDoorConfig;
  readonly key: SigningKey;
  readonly logger: Logger;
  readonly issuer: string;
  readonly idp: IdentityProvider;
  readonly state: SignInState;
  /** Reads a request body, bounded (the listener's reader). */
  readonly readBody: ReadBody;
  /** Audits a sign-in step; `principal` is who, once the ID token named them. */
  record(event: SignInRecord, principal?: Principal): void;
  /** Logs and audits a failed sign-in step. */
  failed(client: Client | undefined, why: string, principal?: Principal): void;
}

/** The most of a registration or token request read. */
export const MAX_BODY = 16 * 1024;

export const random = (bytes = 32) => randomBytes(bytes).toString('base64url');
export const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');
export const digest = (token: string) => createHash('sha256').update(token).digest('base64url');

/** An OAuth error answer: the code and a description that says what to fix. */
export class OAuthError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 400,
  ) {
    super(message);
  }
}

export async function readForm(door: Door, req: IncomingMessage): Promise<URLSearchParams> {
  const text = await door.readBody(req, MAX_BODY);
  if (text === undefined) throw new OAuthError('invalid_request', `the request is over ${MAX_BODY} bytes`);
  return new URLSearchParams(text);
}

/** Why a host may not ask for tokens for `resource`, or undefined when it may. */
export function targetProblem(auth: AuthConfig, resource: string | null): string | undefined {
  if (resource === null || resource === auth.audience) return undefined;
  return `this gateway issues tokens for the resource ${auth.audience} (auth.audience), not ${resource}: connect the host to ${auth.audience}`;
}

/** A page for the user's browser, when there is no host redirect to send an error to. */
export function page(res: ServerResponse, status: number, message: string): void {
  const text = `Sign-in to mcp-warden failed: ${message}\n`;
  res
    .writeHead(status, {
      'Content-Type': 'text/plain; charset=utf-8',
      'Content-Length': Buffer.byteLength(text),
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
    })
    .end(text);
}

export function redirectBack(res: ServerResponse, redirectUri: string, params: Record<string, string>): void {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  res.writeHead(302, { Location: url.href, 'Cache-Control': 'no-store' }).end();
}

export function describeClient(client: Client): string {
  return client.name === undefined ? client.tag : `${client.tag} (${client.name})`;
}

export function sendTokens(res: ServerResponse, answer: object): void {
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Pragma', 'no-cache');
  sendJson(res, 200, answer);
}
