import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  forgetValidDocuments,
  recallDocument,
  rememberValidDocuments,
  validDocumentsFile,
} from '../../src/lib/validDocuments.js';

const IDENTITY = 'a'.repeat(64);

function memoFile(): string {
  const state = mkdtempSync(path.join(tmpdir(), 'warden-valid-'));
  return validDocumentsFile({ XDG_STATE_HOME: state }, '/nowhere');
}

/** The file as written, once the write that follows `remember()` has happened. */
async function written(file: string): Promise<{ version: number; entries: string[] }> {
  await expect.poll(() => statSync(file, { throwIfNoEntry: false }) !== undefined).toBe(true);
  return JSON.parse(readFileSync(file, 'utf8')) as { version: number; entries: string[] };
}

afterEach(() => forgetValidDocuments());

describe('valid documents remembered across runs', () => {
  it('knows nothing unless a serving gateway asked for it', () => {
    expect(recallDocument(IDENTITY, { servers: {} })).toBeUndefined();
  });

  it('remembers a valid document in a file only its user can read, and knows it in the next run', async () => {
    const file = memoFile();
    rememberValidDocuments({ file });
    const document = { servers: { a: { command: 'x' } } };
    expect(recallDocument(IDENTITY, document)?.known).toBe(false);
    recallDocument(IDENTITY, document)?.remember();
    const kept = await written(file);
    expect(kept.version).toBe(1);
    expect(kept.entries).toHaveLength(1);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // The next run: the file is read afresh.
    forgetValidDocuments();
    rememberValidDocuments({ file });
    expect(recallDocument(IDENTITY, document)?.known).toBe(true);
    // Any change of the document, or another validator, is not known.
    expect(recallDocument(IDENTITY, { servers: { a: { command: 'y' } } })?.known).toBe(false);
    expect(recallDocument('b'.repeat(64), document)?.known).toBe(false);
  });

  it.each([
    ['not JSON', 'garbage{'],
    ['another version', JSON.stringify({ version: 2, entries: [] })],
    ['entries that are not digests', JSON.stringify({ version: 1, entries: ['x'] })],
  ])('ignores a file of %s and replaces it at the next write', async (_what, text) => {
    const file = memoFile();
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text, { mode: 0o600 });
    rememberValidDocuments({ file });
    const recall = recallDocument(IDENTITY, { servers: {} });
    expect(recall?.known).toBe(false);
    recall?.remember();
    await expect.poll(() => readFileSync(file, 'utf8')).toContain('"version":1');
    expect((await written(file)).entries).toHaveLength(1);
  });

  it('does not trust a file that others may write', async () => {
    const file = memoFile();
    rememberValidDocuments({ file });
    const document = { servers: {} };
    recallDocument(IDENTITY, document)?.remember();
    await written(file);
    chmodSync(file, 0o622);
    forgetValidDocuments();
    rememberValidDocuments({ file });
    expect(recallDocument(IDENTITY, document)?.known).toBe(false);
  });

  it('takes no digest of what JSON cannot write exactly', () => {
    rememberValidDocuments({ file: memoFile() });
    expect(recallDocument(IDENTITY, { timeout: Number.POSITIVE_INFINITY })).toBeUndefined();
    expect(recallDocument(IDENTITY, { when: new Date(0) })).toBeUndefined();
    expect(recallDocument(IDENTITY, { list: [1, 'a', null, true, { b: [] }] })).toBeDefined();
  });
});
