/**
 * `audit verify --key` against someone who can write the audit folder but does not hold the
 * signing key: each change to a trail written by real gateway runs either fails with its file,
 * line and writer, or, where the format cannot prove it, passes with verify saying what it does
 * not prove.
 */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createHash, createHmac, createPrivateKey, sign } from 'node:crypto';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { FAST_GATEWAY, fixture, killRawSessions, runCli, tempDir, writeConfig } from './harness.js';
import { runCalls, trailLines } from './auditRuns.js';

afterEach(() => killRawSessions());

type Fields = Record<string, unknown>;
const GENESIS = '0'.repeat(64);

const parse = (line: string) => JSON.parse(line) as Fields;

/** A record's line sealed again after its fields changed, as someone rewriting the trail would. */
function reseal(record: Fields): string {
  const { hash: _old, ...rest } = record;
  const open = JSON.stringify(rest).slice(0, -1);
  return `${open},"hash":"${createHash('sha256').update(open).digest('hex')}"}`;
}

const checkpointMessage = (r: Fields) =>
  'mcp-warden audit checkpoint v1\n' +
  `writer ${String(r.writer)}\nseq ${String(r.seq)}\nts ${String(r.ts)}\n` +
  `prev ${String(r.prev)}\nrecords ${String(r.records)}\n`;

let dir: string;
let pub: string;
let privateKey: ReturnType<typeof createPrivateKey>;
/** Two runs of one gateway on trail A; two runs of another gateway, same key, on trail B. */
let A: string[];
let B: string[];

/**
 * Trail B as a gateway holding the key would have written it `shiftMs` later: every `ts`
 * moved, every record re-chained and every checkpoint signed again. What another deployment
 * sharing the key produces at another time; the tests hold the key only to make it.
 */
function shifted(lines: string[], shiftMs: number): string[] {
  const heads = new Map<string, string>();
  return lines.map((line) => {
    const record = parse(line);
    const ts = new Date(Date.parse(String(record.ts)) + shiftMs).toISOString();
    const prev = record.prev === GENESIS ? GENESIS : (heads.get(String(record.prev)) ?? String(record.prev));
    let fields: Fields = { ...record, ts, prev };
    if (record.type === 'checkpoint')
      fields = {
        ...fields,
        sig: sign(null, Buffer.from(checkpointMessage(fields)), privateKey).toString('base64'),
      };
    const sealed = reseal(fields);
    heads.set(String(record.hash), String(parse(sealed).hash));
    return sealed;
  });
}

let cases = 0;
/** Writes `files` (name → lines) into a fresh folder and runs verify on its `audit.jsonl`. */
async function verify(files: Record<string, string[]>, extra: string[] = []) {
  const folder = path.join(dir, `case-${cases++}`);
  mkdirSync(folder);
  for (const [name, lines] of Object.entries(files))
    writeFileSync(path.join(folder, name), lines.length === 0 ? '' : lines.join('\n') + '\n');
  const base = path.join(folder, 'audit.jsonl');
  const result = await runCli(['audit', 'verify', base, '--key', pub, ...extra]);
  return { ...result, base, folder };
}

const index = (lines: string[], test: (r: Fields) => boolean) => lines.findIndex((l) => test(parse(l)));

beforeAll(async () => {
  dir = tempDir();
  const made = await runCli(['audit', 'keygen', '--out', path.join(dir, 'k')]);
  expect(made.code, made.stderr).toBe(0);
  pub = path.join(dir, 'k.pub');
  privateKey = createPrivateKey(readFileSync(path.join(dir, 'k.key'), 'utf8'));
  const trail = async (name: string, runs: string[][]) => {
    const folder = path.join(dir, name);
    mkdirSync(folder);
    const config = writeConfig(
      {
        gateway: FAST_GATEWAY,
        audit: { file: './audit.jsonl', checkpoints: { key: path.join(dir, 'k.key'), interval: '5m' } },
        servers: { up: fixture() },
      },
      folder,
    );
    let from = 1;
    for (const texts of runs) {
      await runCalls(config, texts, from);
      from += texts.length;
    }
    return trailLines(path.join(folder, 'audit.jsonl'));
  };
  [A, B] = await Promise.all([
    // U+FFFD and a composed "é" in the arguments: bytes that a Unicode change could alter.
    trail('a', [['one', 'two \uFFFD caf\u00e9'], ['three']]),
    trail('b', [['elsewhere'], ['elsewhere again']]),
  ]);
  expect(parse(A.at(-1)!).type).toBe('checkpoint');
  expect(new Set(A.map((l) => parse(l).writer)).size).toBe(2);
}, 60_000);

describe('audit verify --key against a changed trail', () => {
  it('segment files: a missing middle file, swapped or repeated files fail; a missing oldest or newest file is what rotation or a cut looks like', async () => {
    const cut = index(A, (r) => r.type === 'checkpoint');
    const files = {
      'audit.jsonl.2': A.slice(0, 4),
      'audit.jsonl.1': A.slice(4, cut + 1),
      'audit.jsonl': A.slice(cut + 1),
    };
    expect((await verify(files)).code).toBe(0);

    let r = await verify({ 'audit.jsonl.2': files['audit.jsonl.2'], 'audit.jsonl': files['audit.jsonl'] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`${r.base}.1: rotated file is missing`);

    r = await verify({
      'audit.jsonl.2': files['audit.jsonl.1'],
      'audit.jsonl.1': files['audit.jsonl.2'],
      'audit.jsonl': files['audit.jsonl'],
    });
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /audit\.jsonl\.1:1: seq 0: seq 0 follows seq \d+ of writer \w+: records are out of order or repeated/,
    );

    r = await verify({ 'audit.jsonl.3': files['audit.jsonl.2'], ...files });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('audit.jsonl.2:1: seq 0: seq 0 follows seq 3');

    // The oldest file gone: what rotation leaves, and verify says where the chain starts.
    r = await verify({ 'audit.jsonl.1': files['audit.jsonl.1'], 'audit.jsonl': files['audit.jsonl'] });
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain('the chain starts at seq 4: earlier records were rotated away or removed');

    // The newest file gone, the trail ending at the first run's checkpoint: only an anchor tells.
    r = await verify({ 'audit.jsonl.2': files['audit.jsonl.2'], 'audit.jsonl.1': files['audit.jsonl.1'] });
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain('records cut from after the last checkpoint would leave no trace');
    r = await verify({ 'audit.jsonl.2': files['audit.jsonl.2'], 'audit.jsonl.1': files['audit.jsonl.1'] }, [
      '--anchor',
      A.at(-1)!,
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('is not in the trail: records were removed from its end');
  });

  it('records after the last checkpoint: verify counts them and says their removal would leave no trace', async () => {
    const r = await verify({ 'audit.jsonl': A.slice(0, -1) });
    expect(r.code).toBe(1);
    const first = index(A, (x) => x.type === 'checkpoint') + 2;
    const writer = String(parse(A.at(-1)!).writer);
    expect(r.stdout).toContain(
      `${r.base}:${first}: seq ${first - 1}: not yet anchored: writer ${writer} (${A.length - first} records from ${r.base}:${first})`,
    );
    expect(r.stdout).toContain('removing them would leave no trace');
  });

  it('a chain copied from another trail signed with the same key fails where it starts from genesis, naming its writer, file and line', async () => {
    const later = shifted(B, 2 * 3600_000);
    const bWriter = String(parse(B[0]!).writer);
    const aWriter = String(parse(A[0]!).writer);
    // Appended after the trail's checkpoints.
    let r = await verify({ 'audit.jsonl': [...A, ...B] });
    expect(r.code, r.stdout).toBe(1);
    expect(r.stdout).toContain(
      `${r.base}:${A.length + 1}: seq 0: a chain starts from genesis where no gateway could have started one: writer ${bWriter} from ${r.base}:${A.length + 1} (after a checkpoint)`,
    );
    // Put first: the trail's own chain is then the one that starts late.
    r = await verify({ 'audit.jsonl': [...B, ...A] });
    expect(r.code, r.stdout).toBe(1);
    expect(r.stdout).toContain(`writer ${aWriter} from ${r.base}:${B.length + 1} (after a checkpoint)`);
    // Slipped in before the first checkpoint, from a gateway that started two hours later.
    r = await verify({ 'audit.jsonl': [A[0]!, ...later, ...A.slice(1)] });
    expect(r.code, r.stdout).toBe(1);
    expect(r.stdout).toContain(`${r.base}:2: seq 0: a chain starts from genesis`);
    expect(r.stdout).toContain(`writer ${bWriter} from ${r.base}:2 (7200 s from the trail's first record)`);
    // The limit: a trail started within a minute of this one looks like gateways started together.
    r = await verify({ 'audit.jsonl': [A[0]!, ...B, ...A.slice(1)] });
    expect(r.code, r.stdout).toBe(0);
    // A chain that continues from a record not present, in a trail whose oldest files rotated
    // away: indistinguishable from a gateway's own, and named in the summary.
    const secondRun = B.slice(index(B, (x) => x.type === 'checkpoint') + 1);
    r = await verify({ 'audit.jsonl': [...A.slice(3), ...secondRun] });
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toContain(
      `1 chain (writer ${String(parse(secondRun[0]!).writer)} from ${r.base}:${A.length - 2}) continues from records not in the trail`,
    );
  });

  it('a writer id reused, a seq repeated or skipped, and a chain begun after the last checkpoint fail', async () => {
    const aWriter = String(parse(A[0]!).writer);
    const forged: string[] = [];
    let prev = GENESIS;
    for (let seq = 0; seq < 2; seq++) {
      const line = reseal({ ...parse(A[3]!), seq, prev, writer: aWriter });
      forged.push(line);
      prev = String(parse(line).hash);
    }
    const cut = index(A, (x) => x.type === 'checkpoint');
    let r = await verify({ 'audit.jsonl': [...A.slice(0, cut + 1), ...forged, ...A.slice(cut + 1)] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`${r.base}:${cut + 2}: seq 0: seq 0 follows seq ${cut} of writer ${aWriter}`);

    r = await verify({ 'audit.jsonl': [...A.slice(0, 4), A[3]!, ...A.slice(4)] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      `${r.base}:5: seq 3: seq 3 follows seq 3 of writer ${aWriter}: records are out of order or repeated`,
    );
    r = await verify({ 'audit.jsonl': [...A.slice(0, 3), ...A.slice(4)] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      `${r.base}:4: seq 4: seq 4 follows seq 2 of writer ${aWriter}: 1 record of this writer is missing`,
    );

    // A chain from the trail's last record, as a gateway starting now would write it, unsigned.
    const next = reseal({ ...parse(A[3]!), seq: A.length, prev: parse(A.at(-1)!).hash, writer: 'w-late' });
    r = await verify({ 'audit.jsonl': [...A, next] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`${r.base}:${A.length + 1}: seq ${A.length}: not yet anchored: writer w-late`);
  });

  it('an edited record with its own hash fixed fails at the next record; reformatting and Unicode changes fail at the record', async () => {
    const at = index(A, (x) => x.type === 'call');
    const edited = reseal({ ...parse(A[at]!), outcome: 'denied' });
    let r = await verify({ 'audit.jsonl': A.with(at, edited) });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`${r.base}:${at + 2}: seq ${at + 1}: prev is not the hash of writer`);

    const same = (line: string) =>
      expect(JSON.stringify(JSON.parse(line))).toBe(JSON.stringify(JSON.parse(A[at]!)));
    const spaced = A[at]!.replace('"outcome":', '"outcome": ');
    expect(JSON.parse(spaced)).toEqual(JSON.parse(A[at]!));
    const reordered = A[at]!.replace(/^\{"seq":(\d+),"ts":("[^"]+"),/, '{"ts":$2,"seq":$1,');
    expect(JSON.parse(reordered)).toEqual(JSON.parse(A[at]!));
    const escaped = A[at]!.replace('"ok"', '"\\u006fk"');
    same(escaped);
    for (const variant of [spaced, reordered, escaped]) {
      r = await verify({ 'audit.jsonl': A.with(at, variant) });
      expect(r.code).toBe(1);
      expect(r.stdout).toContain(`${r.base}:${at + 1}: seq ${at}: hash mismatch`);
    }

    // "é" decomposed (NFD): the same text to a reader, other bytes.
    const withText = index(A, (x) => x.type === 'call' && JSON.stringify(x.args).includes('caf'));
    const nfd = A[withText]!.replace('caf\u00e9', 'cafe\u0301');
    expect(nfd).not.toBe(A[withText]);
    r = await verify({ 'audit.jsonl': A.with(withText, nfd) });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`${r.base}:${withText + 1}: seq ${withText}: hash mismatch`);

    // The bytes of a U+FFFD swapped for an invalid byte, which also reads back as U+FFFD.
    const folder = (await verify({ 'audit.jsonl': A })).folder;
    const bytes = readFileSync(path.join(folder, 'audit.jsonl'));
    const fffd = bytes.indexOf(Buffer.from('\uFFFD'));
    expect(fffd).toBeGreaterThan(0);
    const swapped = Buffer.concat([bytes.subarray(0, fffd), Buffer.from([0xff]), bytes.subarray(fffd + 3)]);
    expect(swapped.toString('utf8')).toBe(bytes.toString('utf8'));
    writeFileSync(path.join(folder, 'audit.jsonl'), swapped);
    const line = swapped.subarray(0, fffd).toString().split('\n').length;
    const bad = await runCli(['audit', 'verify', path.join(folder, 'audit.jsonl'), '--key', pub]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(`audit.jsonl:${line}: seq ${line - 1}: not valid UTF-8`);
  });

  it('a checkpoint with an added member, another host, its values or signature spelled otherwise, another algorithm or another key id fails', async () => {
    const last = parse(A.at(-1)!);
    const head = A.slice(0, -1);
    let r = await verify({ 'audit.jsonl': [...head, reseal({ ...last, alg: 'none' })] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      `${r.base}:${A.length}: seq ${A.length - 1}: checkpoint has members a gateway does not write (alg)`,
    );

    r = await verify({ 'audit.jsonl': [...head, reseal({ ...last, host: 'elsewhere' })] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('checkpoint names host "elsewhere"');

    // The same values spelled otherwise, the hash sealed again: the last record has no next
    // record whose prev would catch it.
    const text = reseal(last);
    expect(text).toBe(A.at(-1));
    const open = text.slice(0, text.lastIndexOf(',"hash":'));
    const respelled = [
      open.replace('"type":', '"type": '),
      open.replace(/^\{"seq":(\d+),"ts":("[^"]+"),/, '{"ts":$2,"seq":$1,'),
      open.replace('"ts":"2', '"ts":"\\u0032'),
      open.replace(`"records":${String(last.records)}`, `"records":${String(last.records)}.0`),
    ];
    for (const variant of respelled) {
      expect(variant).not.toBe(open);
      expect(JSON.parse(`${variant}}`)).toEqual(JSON.parse(`${open}}`));
      const line = `${variant},"hash":"${createHash('sha256').update(variant).digest('hex')}"}`;
      r = await verify({ 'audit.jsonl': [...head, line] });
      expect(r.code, variant).toBe(1);
      expect(r.stdout).toContain(
        `${r.base}:${A.length}: seq ${A.length - 1}: checkpoint is not written as a gateway writes one`,
      );
    }

    // The signature's text changed so that it decodes to the same bytes.
    const sig = String(last.sig);
    for (const variant of [
      `${sig} `,
      `${sig}!`,
      sig.replace(/=+$/, ''),
      sig.replaceAll('/', '_').replaceAll('+', '-'),
    ]) {
      if (variant === sig) continue;
      r = await verify({ 'audit.jsonl': [...head, reseal({ ...last, sig: variant })] });
      expect(r.code, variant).toBe(1);
      expect(r.stdout).toContain(
        `${r.base}:${A.length}: seq ${A.length - 1}: checkpoint signature does not match`,
      );
    }

    // HMAC-SHA256 keyed with the public key's text, in place of the Ed25519 signature.
    const hmac = createHmac('sha256', readFileSync(pub)).update(checkpointMessage(last)).digest('base64');
    r = await verify({ 'audit.jsonl': [...head, reseal({ ...last, sig: hmac })] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(
      `${r.base}:${A.length}: seq ${A.length - 1}: checkpoint signature does not match`,
    );

    // As the anchor: an HMAC in place of the signature, or an alg that asks for none, is no
    // signed checkpoint; the anchor's signature is checked like the trail's.
    r = await verify({ 'audit.jsonl': A }, [
      '--anchor',
      JSON.stringify({ ...last, sig: hmac, alg: 'HS256' }),
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('the anchor is not a checkpoint signed by the given key');
    r = await verify({ 'audit.jsonl': A }, ['--anchor', JSON.stringify({ ...last, sig: '', alg: 'none' })]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('the anchor is not a checkpoint signed by the given key');
    r = await verify({ 'audit.jsonl': A }, ['--anchor', JSON.stringify({ ...last, sig: `${sig} ` })]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('the anchor is not a checkpoint signed by the given key');

    r = await verify({ 'audit.jsonl': [...head, reseal({ ...last, key: '0123456789abcdef' })] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('checkpoint signed by key 0123456789abcdef, not by the given key');
  });

  it('an empty trail and one of checkpoints only; files that are symlinks', async () => {
    let r = await verify({ 'audit.jsonl': [] });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('no checkpoint signed by key');

    // Checkpoints alone read as a trail whose older records rotated away: the chain says so.
    r = await verify({ 'audit.jsonl': A.filter((l) => parse(l).type === 'checkpoint') });
    expect(r.code, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/the chain starts at seq \d+: earlier records were rotated away or removed/);
    expect(r.stdout).toContain('continues from records not in the trail');

    // A symlink to a file elsewhere is read like the file: what counts is what it holds.
    r = await verify({ 'elsewhere.jsonl': A });
    symlinkSync(path.join(r.folder, 'elsewhere.jsonl'), r.base);
    let again = await runCli(['audit', 'verify', r.base, '--key', pub]);
    expect(again.code, again.stdout).toBe(0);
    writeFileSync(
      path.join(r.folder, 'elsewhere.jsonl'),
      [...A.slice(0, 3), ...A.slice(4)].join('\n') + '\n',
    );
    again = await runCli(['audit', 'verify', r.base, '--key', pub]);
    expect(again.code).toBe(1);

    // One that leads to a FIFO or a device: refused, not waited on or read forever.
    const fifo = path.join(r.folder, 'fifo');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    symlinkSync(fifo, `${r.base}.1`);
    again = await runCli(['audit', 'verify', r.base, '--key', pub]);
    expect(again.code).toBe(1);
    expect(again.stdout).toContain(`${r.base}.1: cannot read: not a regular file`);
    symlinkSync('/dev/zero', `${r.base}.2`);
    again = await runCli(['audit', 'verify', r.base, '--key', pub]);
    expect(again.code).toBe(1);
    expect(again.stdout).toContain(`${r.base}.2: cannot read: not a regular file`);
  });
});
