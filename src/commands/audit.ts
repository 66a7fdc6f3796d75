import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** What a command prints and its exit code; a usage problem is reported as `usage`. */
export type CommandResult =
  | { readonly code: number; readonly stdout: string }
  | { readonly usage: string }
  | { readonly code: number; readonly error: string };

/**
 * `mcp-warden audit keygen [--out PREFIX]`: writes PREFIX.key (the Ed25519 private key, PKCS#8
 * PEM, mode 0600) and PREFIX.pub (its public key, SPKI PEM). Refuses to overwrite either: a
 * replaced key makes every earlier checkpoint unverifiable with the new public key.
 */
export async function auditKeygen(out: string | undefined): Promise<CommandResult> {
  const { generateCheckpointKeys } = await import('../features/audit/checkpoint.js');
  const prefix = path.resolve(out ?? 'audit-checkpoint');
  const privateFile = `${prefix}.key`;
  const publicFile = `${prefix}.pub`;
  for (const file of [privateFile, publicFile]) {
    if (existsSync(file)) {
      return {
        code: 1,
        error: `${file} exists; move it away or choose another --out (keys are never overwritten)`,
      };
    }
  }
  const keys = generateCheckpointKeys();
  try {
    writeFileSync(privateFile, keys.privatePem, { mode: 0o600, flag: 'wx' });
    writeFileSync(publicFile, keys.publicPem, { mode: 0o644, flag: 'wx' });
  } catch (error) {
    return { code: 1, error: `cannot write the key pair: ${(error as Error).message}` };
  }
  return {
    code: 0,
    stdout:
      `wrote ${privateFile} (private: give it to the gateway as audit.checkpoints.key)\n` +
      `wrote ${publicFile} (public: give it to "audit verify --key"; key id ${keys.keyId})\n`,
  };
}

/**
 * `mcp-warden audit verify FILE [--key PUB] [--anchor CHECKPOINT]`: the hash chain, and with a
 * key the signed checkpoints; CHECKPOINT is a checkpoint record (its JSON, inline or in a file).
 */
export async function auditVerify(
  base: string,
  options: { readonly key?: string; readonly anchor?: string },
): Promise<CommandResult> {
  const { formatVerifyResult, verifyAuditFiles } = await import('../features/audit/verify.js');
  if (options.key === undefined) {
    if (options.anchor !== undefined)
      return { usage: '--anchor needs --key (the anchor is checked by its signature)' };
    const result = verifyAuditFiles(base);
    return { code: result.ok ? 0 : 1, stdout: `${formatVerifyResult(result)}\n` };
  }
  const [{ loadCheckpointPublicKey, CheckpointKeyError }, { createCheckpointCheck, parseAnchor }] =
    await Promise.all([
      import('../features/audit/checkpoint.js'),
      import('../features/audit/verifyCheckpoints.js'),
    ]);
  let key;
  try {
    key = loadCheckpointPublicKey(path.resolve(options.key));
  } catch (error) {
    if (error instanceof CheckpointKeyError) return { code: 2, error: error.message };
    throw error;
  }
  let anchor;
  if (options.anchor !== undefined) {
    const given = options.anchor.trimStart();
    let text: string;
    try {
      text = given.startsWith('{') ? given : readFileSync(path.resolve(options.anchor), 'utf8');
    } catch (error) {
      return { code: 2, error: `cannot read the anchor ${options.anchor}: ${(error as Error).message}` };
    }
    const parsed = parseAnchor(text);
    if (typeof parsed === 'string') return { code: 2, error: `--anchor: ${parsed}` };
    anchor = parsed;
  }
  const result = verifyAuditFiles(base, createCheckpointCheck({ ...key, ...(anchor && { anchor }) }));
  return { code: result.ok ? 0 : 1, stdout: `${formatVerifyResult(result)}\n` };
}

/**
 * What waits in the spools beside the audit file (`FILE.spool/<sink>`), or in the spool folder
 * `base` itself (`root`), one line per sink with records waiting, for `audit summary`; empty
 * when nothing waits or no sink was ever configured.
 */
export async function auditPending(base: string, options: { root?: boolean } = {}): Promise<string> {
  const { spoolPending } = await import('../features/audit/shipping/spool.js');
  const root = options.root === true ? base : `${base}.spool`;
  let sinks: string[];
  try {
    sinks = readdirSync(root).sort();
  } catch {
    return '';
  }
  const lines: string[] = [];
  for (const sink of sinks) {
    const pending = spoolPending(path.join(root, sink));
    if (pending === undefined || pending.records === 0) continue;
    lines.push(
      `waiting for sink ${sink}: ${pending.records} record${pending.records === 1 ? '' : 's'} (${pending.bytes} bytes) in ${path.join(root, sink)}`,
    );
  }
  return lines.length === 0 ? '' : `\n${lines.join('\n')}\n`;
}
