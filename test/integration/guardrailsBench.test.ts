/**
 * The guardrails benchmark must not rot: a run with tiny counts scores the detectors on our own
 * vectors and times a 1 KiB and a 1 MiB result through the built gateway. It judges nothing
 * about speed (`--smoke` gives no verdict on the bound): only that every part ran and printed.
 */
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

describe('bench/guardrails.mjs --smoke', () => {
  it('scores every category it has vectors for and times both result sizes', { timeout: 120_000 }, () => {
    const run = spawnSync(
      process.execPath,
      ['bench/guardrails.mjs', '--smoke', '--calls-small', '5', '--calls-large', '1'],
      { cwd: ROOT, encoding: 'utf8', timeout: 110_000 },
    );
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    for (const category of [
      'aws-access-key',
      'google-api-key',
      'jwt',
      'email',
      'phone',
      'card-number',
      'iban',
    ])
      expect(run.stdout).toMatch(new RegExp(`\\| ${category} \\| \\d+ \\| 0 \\|`));
    expect(run.stdout).toMatch(/\| 1 KiB \| 5 \|/);
    expect(run.stdout).toMatch(/\| 1 MiB \| 1 \|/);
    expect(run.stdout).toMatch(/guardrails add -?[\d.]+ ms of the gateway's CPU to a 1 MiB result/);
  });
});
