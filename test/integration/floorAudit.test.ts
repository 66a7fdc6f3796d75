/**
 * bench/floor.mjs with FLOOR_AUDIT is the bench's json-floor-audit: the least audit trail with
 * the gateway's default guarantees, against which the bench weighs what those guarantees cost.
 * If it stopped auditing (or stopped writing ahead, chaining or redacting), its figures would
 * flatter every comparison made with it: these tests hold it to the guarantees, through the
 * SDK Client as host and the bench's own fixture server as upstream.
 */
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { NODE, ROOT, runCli, tempDir } from './harness.js';

const FLOOR = path.join(ROOT, 'bench/floor.mjs');
const BENCH_FIXTURE = path.join(ROOT, 'bench/fixture/server.mjs');
const GITHUB_TOKEN = `ghp_${'a1B2c3D4e5'.repeat(4)}`;
const PASSWORD = 'correct horse battery staple';

/**
 * An upstream that answers each tool call with the `text` arguments of the `call_start` records
 * in the audit file when the call reaches it (the floor passes FLOOR_AUDIT on to it).
 */
const PEEKING_UPSTREAM = `
const { readFileSync } = require('node:fs');
require('node:readline').createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  if (message.id === undefined) return;
  let result = {};
  if (message.method === 'initialize')
    result = { protocolVersion: message.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'peek', version: '1' } };
  else if (message.method === 'tools/call') {
    const started = readFileSync(process.env.FLOOR_AUDIT, 'utf8').split('\\n').filter(Boolean)
      .map((text) => JSON.parse(text)).filter((record) => record.type === 'call_start')
      .map((record) => record.args.text);
    result = { content: [{ type: 'text', text: JSON.stringify(started) }] };
  }
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: message.id, result }) + '\\n');
});
`;

async function floorHost(auditFile: string, upstream = [BENCH_FIXTURE]): Promise<Client> {
  const client = new Client({ name: 'floor-audit-test', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: NODE,
      args: [FLOOR, NODE, ...upstream],
      env: { PATH: process.env.PATH ?? '', FLOOR_AUDIT: auditFile },
      stderr: 'pipe',
    }),
  );
  return client;
}

interface AuditLine {
  readonly text: string;
  readonly record: Record<string, unknown>;
}

function auditLines(file: string): AuditLine[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((text) => text !== '')
    .map((text) => ({ text, record: JSON.parse(text) as Record<string, unknown> }));
}

describe('bench/floor.mjs with FLOOR_AUDIT (json-floor-audit)', () => {
  it('writes a chained write-ahead and answer record per call, with secrets redacted', async () => {
    const dir = tempDir('warden-floor-audit-');
    const file = path.join(dir, 'audit.jsonl');
    try {
      const client = await floorHost(file);
      const texts = ['one', 'two', `use ${GITHUB_TOKEN} please`];
      for (const [i, text] of texts.entries()) {
        const args = text === 'two' ? { text, password: PASSWORD } : { text };
        const result = await client.callTool({ name: 'echo', arguments: args });
        expect(result.content).toEqual([{ type: 'text', text }]);
        // The answer's record was in the file before the answer left the floor.
        expect(auditLines(file).at(-1)?.record).toMatchObject({ type: 'call', call: i + 1 });
      }
      await client.close();

      const lines = auditLines(file);
      expect(lines.map(({ record }) => [record['type'], record['call']])).toEqual([
        ['call_start', 1],
        ['call', 1],
        ['call_start', 2],
        ['call', 2],
        ['call_start', 3],
        ['call', 3],
      ]);
      for (const { record } of lines) {
        expect(record).toMatchObject({ tool: 'echo', upstreamTool: 'echo' });
        if (record['type'] === 'call')
          expect(record).toMatchObject({ outcome: 'ok', client: { name: 'floor-audit-test' } });
      }

      // The chain, recomputed: each line's hash is the SHA-256 of its text up to the hash
      // member, and names the line before it as `prev`, from the genesis hash on.
      let prev = '0'.repeat(64);
      lines.forEach(({ text, record }, seq) => {
        expect(record['seq']).toBe(seq);
        expect(record['prev']).toBe(prev);
        const cut = text.lastIndexOf(',"hash":"');
        expect(text.slice(cut)).toBe(`,"hash":"${String(record['hash'])}"}`);
        prev = createHash('sha256').update(text.slice(0, cut)).digest('hex');
        expect(record['hash']).toBe(prev);
      });
      // The gateway's own verifier accepts the floor's trail as one of its own.
      const verify = await runCli(['audit', 'verify', file]);
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);

      const text = readFileSync(file, 'utf8');
      expect(text).not.toContain(GITHUB_TOKEN);
      expect(text).not.toContain(PASSWORD);
      expect(lines[2]?.record['args']).toEqual({ text: 'two', password: '[REDACTED]' });
      expect(lines[5]?.record['args']).toEqual({ text: 'use [REDACTED] please' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('writes each call_start before the call reaches the server', async () => {
    const dir = tempDir('warden-floor-audit-');
    const file = path.join(dir, 'audit.jsonl');
    try {
      const client = await floorHost(file, ['-e', PEEKING_UPSTREAM]);
      const seen = await Promise.all(
        ['a', 'b', 'c'].map(async (text) => {
          const result = await client.callTool({ name: 'peek', arguments: { text } });
          const [block] = result.content as { text: string }[];
          return { text, started: JSON.parse(block?.text ?? 'null') as string[] };
        }),
      );
      await client.close();
      for (const { text, started } of seen) expect(started).toContain(text);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a call whose write-ahead record cannot be written, and records the gap after', async () => {
    const dir = tempDir('warden-floor-audit-');
    // A folder where the file should be: opening it for writing fails.
    const file = path.join(dir, 'audit.jsonl');
    mkdirSync(file);
    try {
      const client = await floorHost(file);
      await expect(client.callTool({ name: 'echo', arguments: { text: 'refused' } })).rejects.toThrow(
        /audit log cannot be written/,
      );
      rmSync(file, { recursive: true });
      const result = await client.callTool({ name: 'echo', arguments: { text: 'served' } });
      expect(result.content).toEqual([{ type: 'text', text: 'served' }]);
      await client.close();

      const lines = auditLines(file);
      expect(lines.map(({ record }) => [record['type'], record['call']])).toEqual([
        ['audit_gap', undefined],
        ['call_start', 2],
        ['call', 2],
      ]);
      expect(lines[0]?.record).toMatchObject({ lost: 1 });
      const verify = await runCli(['audit', 'verify', file]);
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
