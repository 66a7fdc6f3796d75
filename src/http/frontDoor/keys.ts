/**
 * The key the front door signs its access tokens with, and the JWKS it publishes. Either the
 * configured one (a JWK or PKCS#8 PEM, so that replicas share it), or one generated on first
 * start and kept in a file only the gateway's user can read, so that tokens stay valid across a
 * restart.
 */
import { createHash, createHmac } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  calculateJwkThumbprint,
  exportJWK,
  exportPKCS8,
  generateKeyPair,
  importJWK,
  importPKCS8,
  type CryptoKey,
  type JWK,
} from 'jose';
import { sha256Hex } from '../../lib/hash.js';
import { stateFolder } from '../../lib/stateFolder.js';

export interface SigningKey {
  readonly alg: 'ES256' | 'RS256';
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  /** The public key as published at /oauth/jwks. */
  readonly publicJwk: JWK;
  /** Seals what the gateway hands out and later takes back (registered client ids). */
  mac(text: string): string;
}

/** Where a config's generated key is kept: the user's state folder, named for the config file. */
export function keyFileFor(configFile: string, env = process.env): string {
  return path.join(stateFolder(env), `front-door-${sha256Hex(configFile).slice(0, 16)}.key`);
}

/**
 * The signing key: from `configured` (JWK JSON or PEM), else read from `file`, else generated
 * and written there (mode 0600). Throws with a message naming the key's source when it cannot
 * be used.
 */
export async function loadSigningKey(options: {
  readonly configured?: string;
  readonly file: string;
}): Promise<SigningKey> {
  if (options.configured !== undefined) {
    try {
      return await fromText(options.configured);
    } catch (error) {
      throw new Error(`auth.frontDoor.signingKey: ${(error as Error).message}`);
    }
  }
  let text: string | undefined;
  try {
    text = readFileSync(options.file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new Error(`cannot read the front door's key ${options.file}: ${(error as Error).message}`);
  }
  if (text !== undefined) {
    try {
      return await fromText(text);
    } catch (error) {
      throw new Error(`${options.file}: ${(error as Error).message} (remove it to make a new one)`);
    }
  }
  const { privateKey } = await generateKeyPair('ES256', { extractable: true });
  const pem = await exportPKCS8(privateKey);
  mkdirSync(path.dirname(options.file), { recursive: true, mode: 0o700 });
  // `wx`: two gateways starting at once must not overwrite each other's key.
  try {
    writeFileSync(options.file, pem, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST')
      return fromText(readFileSync(options.file, 'utf8'));
    throw new Error(`cannot write the front door's key ${options.file}: ${(error as Error).message}`);
  }
  return fromText(pem);
}

async function fromText(text: string): Promise<SigningKey> {
  const trimmed = text.trim();
  let privateKey: CryptoKey;
  let alg: 'ES256' | 'RS256';
  if (trimmed.startsWith('{')) {
    const jwk = JSON.parse(trimmed) as JWK;
    if (jwk.d === undefined) throw new Error('the JWK has no private part (d)');
    alg = jwk.kty === 'RSA' ? 'RS256' : 'ES256';
    if (jwk.kty === 'EC' && jwk.crv !== 'P-256')
      throw new Error(`an EC key must be on P-256, not ${jwk.crv}`);
    privateKey = (await importJWK(jwk, alg, { extractable: true })) as CryptoKey;
  } else if (trimmed.startsWith('-----BEGIN PRIVATE KEY-----')) {
    // The PEM does not say its algorithm; the key's type does, and import checks it.
    alg = 'ES256';
    privateKey = await importPKCS8(trimmed, 'ES256', { extractable: true }).catch(() => {
      alg = 'RS256';
      return importPKCS8(trimmed, 'RS256', { extractable: true });
    });
  } else throw new Error('expected a private JWK (JSON) or a PKCS#8 PEM (-----BEGIN PRIVATE KEY-----)');
  const full = await exportJWK(privateKey);
  const publicJwk: JWK = { kty: full.kty!, ...pick(full, ['crv', 'x', 'y', 'n', 'e']) };
  const kid = await calculateJwkThumbprint(publicJwk);
  const publicKey = (await importJWK(publicJwk, alg, { extractable: true })) as CryptoKey;
  // A MAC key of its own, derived from the private key: the key file is the only secret to keep.
  const macKey = createHash('sha256').update('mcp-warden front door mac\u0000').update(full.d!).digest();
  return {
    alg,
    kid,
    privateKey,
    publicKey,
    publicJwk: { ...publicJwk, kid, alg, use: 'sig' },
    mac: (value) => createHmac('sha256', macKey).update(value).digest('base64url'),
  };
}

function pick(jwk: JWK, keys: readonly string[]): Partial<JWK> {
  const out: Record<string, unknown> = {};
  for (const key of keys)
    if ((jwk as Record<string, unknown>)[key] !== undefined) out[key] = (jwk as Record<string, unknown>)[key];
  return out as Partial<JWK>;
}
