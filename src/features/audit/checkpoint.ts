import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  verify,
  type KeyObject,
} from 'node:crypto';
import { readFileSync } from 'node:fs';

/*
 * Signed checkpoints. A hash chain alone proves only that the records agree with each other:
 * whoever can write the file can cut its end off, or rewrite it whole with fresh hashes. A
 * checkpoint signs the chain's head with a key the gateway holds and the verifier does not need
 * (Ed25519, node:crypto), so a rewrite shows (the signature no longer matches), and a copy of a
 * checkpoint kept elsewhere (the SIEM receives each one) shows a cut: the trail must still
 * contain it.
 */

/** What a checkpoint signs: its place in the chain, and the chain's head before it. */
export interface CheckpointFields {
  readonly writer: string;
  readonly seq: number;
  readonly ts: string;
  /** Hash of the record before the checkpoint: the chain head it vouches for. */
  readonly prev: string;
  readonly records: number;
}

/**
 * The exact text signed. Line-based and versioned, so it never depends on how a JSON library
 * orders or escapes members.
 */
export function checkpointMessage(fields: CheckpointFields): string {
  return (
    'mcp-warden audit checkpoint v1\n' +
    `writer ${fields.writer}\nseq ${fields.seq}\nts ${fields.ts}\nprev ${fields.prev}\nrecords ${fields.records}\n`
  );
}

/** Signs checkpoints with a private key; `keyId` names the matching public key. */
export interface CheckpointSigner {
  readonly keyId: string;
  /** Base64 Ed25519 signature of `message`. */
  sign(message: string): string;
}

/** The first 16 hex digits of the SHA-256 of a public key's SPKI DER: short, and enough to tell keys apart. */
export function keyIdOf(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return createHash('sha256').update(der).digest('hex').slice(0, 16);
}

/** A key file could not be used; the message names the file and what is wrong. */
export class CheckpointKeyError extends Error {}

function readKeyFile(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new CheckpointKeyError(`cannot read the ${what} ${file}: ${(error as Error).message}`);
  }
}

/** Loads an Ed25519 private key (PEM, PKCS#8, as `audit keygen` writes it). Throws `CheckpointKeyError`. */
export function loadCheckpointSigner(file: string): CheckpointSigner {
  const text = readKeyFile(file, 'checkpoint key');
  let key: KeyObject;
  try {
    key = createPrivateKey(text);
  } catch (error) {
    throw new CheckpointKeyError(
      `${file} is not a private key in PEM form (${(error as Error).message}); make one with "mcp-warden audit keygen"`,
    );
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new CheckpointKeyError(
      `${file} is a ${String(key.asymmetricKeyType)} key; checkpoints need an Ed25519 key ("mcp-warden audit keygen")`,
    );
  }
  const keyId = keyIdOf(createPublicKey(key));
  return { keyId, sign: (message) => sign(null, Buffer.from(message, 'utf8'), key).toString('base64') };
}

/** Loads an Ed25519 public key (PEM, SPKI); a private key file is accepted too. Throws `CheckpointKeyError`. */
export function loadCheckpointPublicKey(file: string): { readonly key: KeyObject; readonly keyId: string } {
  const text = readKeyFile(file, 'public key');
  let key: KeyObject;
  try {
    key = createPublicKey(text);
  } catch (error) {
    throw new CheckpointKeyError(`${file} is not a public key in PEM form (${(error as Error).message})`);
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new CheckpointKeyError(`${file} is a ${String(key.asymmetricKeyType)} key, not Ed25519`);
  }
  return { key, keyId: keyIdOf(key) };
}

/** A fresh Ed25519 key pair as PEM text (private PKCS#8, public SPKI) and the key's id. */
export function generateCheckpointKeys(): { privatePem: string; publicPem: string; keyId: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    keyId: keyIdOf(publicKey),
  };
}

/**
 * A checkpoint record's own members as a writer writes them (checkpointer.ts), before the writer's
 * members and the chain's: the verifier rebuilds the line with it (verifyCheckpoints.ts).
 */
export function checkpointMembersText(
  records: unknown,
  keyId: unknown,
  sig: unknown,
  sessionMember: string,
): string {
  return `"type":"checkpoint","records":${String(records)},"key":"${String(keyId)}","sig":"${String(sig)}"${sessionMember}`;
}

/**
 * Whether `sig` is `key`'s signature of the checkpoint `fields`, in base64 exactly as the signer
 * writes it. Node's base64 decoder skips what it does not know (spaces, `!`, a second padding,
 * the URL alphabet), so many texts decode to one signature: without the exact form, the text of
 * a trail's last checkpoint, which no later record's `prev` covers, could be changed.
 */
export function checkpointSignatureValid(fields: CheckpointFields, sig: string, key: KeyObject): boolean {
  const bytes = Buffer.from(sig, 'base64');
  if (bytes.toString('base64') !== sig) return false;
  try {
    return verify(null, Buffer.from(checkpointMessage(fields), 'utf8'), key, bytes);
  } catch {
    return false;
  }
}
