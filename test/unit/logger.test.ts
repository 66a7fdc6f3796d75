import { afterEach, describe, expect, it, vi } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger } from '../../src/core/logger.js';

const LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z mcp-warden /;

afterEach(() => {
  vi.restoreAllMocks();
});

function stderrLines(): string[] {
  const lines: string[] = [];
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  return lines;
}

describe('the diagnostic logger', () => {
  it('writes one line per entry to stderr, at or above its level, scopes nested', async () => {
    const lines = stderrLines();
    const logger = createLogger({ level: 'info' });
    logger.info('ready');
    logger.debug('not shown');
    logger.child('fs').child('tool').warn('slow', { ms: 12 });
    await logger.close();
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(LINE);
    expect(lines[0]).toMatch(/ mcp-warden info: ready\n$/);
    expect(lines[1]).toMatch(/ mcp-warden warn \[fs\/tool\]: slow \{"ms":12\}\n$/);
  });

  it('redacts the message and every metadata value', async () => {
    const lines = stderrLines();
    const logger = createLogger(
      { level: 'debug' },
      { redact: { text: (t) => t.replaceAll('s3cret', '[REDACTED]'), value: () => '[VALUE]' } },
    );
    logger.error('key s3cret', { note: 'also s3cret', nested: { s3cret: 1 } });
    await logger.close();
    expect(lines[0]).toMatch(
      / error: key \[REDACTED\] \{"note":"also \[REDACTED\]","nested":"\[VALUE\]"\}\n$/,
    );
  });

  it('writes the same lines to its file, made with its folder, all there once closed', async () => {
    const lines = stderrLines();
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'warden-log-')), 'logs/gateway.log');
    const logger = createLogger({ level: 'warn', file });
    for (let i = 0; i < 100; i++) logger.warn(`line ${i}`);
    await logger.close();
    expect(readFileSync(file, 'utf8')).toBe(lines.join(''));
    expect(lines).toHaveLength(100);
  });
});
