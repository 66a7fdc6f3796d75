/**
 * `audit.checkpoints` and `audit.sinks`: defaults filled in, paths resolved, and what the schema
 * cannot say (keys a sink type needs, keys of the other type, names used twice) reported as
 * file:line errors.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/load.js';
import { Spool } from '../../src/features/audit/shipping/spool.js';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { thrownIssues } from './configIssues.js';

const DIR = path.resolve('/srv/warden');
const FILE = path.join(DIR, 'proxy.config.yaml');
const parse = (text: string) => parseConfigText(text, { file: FILE, env: {} }).config;
const issuesOf = (text: string) => thrownIssues(() => parse(text));

describe('audit shipping config', () => {
  it('fills the defaults and resolves paths', () => {
    const config = parse(
      [
        'audit:',
        '  file: a.jsonl',
        '  checkpoints: { key: keys/k.key }',
        '  sinks:',
        '    - { type: syslog, host: siem, port: 514 }',
        '    - { type: otlp, endpoint: "http://c:4318/v1/logs", format: ocsf, required: true }',
        '    - { type: syslog, host: other, port: 6514, tls: true, ca: ca.pem, spoolMaxSize: 1MiB }',
        'servers:',
        '  a: { command: x }',
        '',
      ].join('\n'),
    );
    expect(config.audit?.checkpoints).toEqual({ key: path.join(DIR, 'keys/k.key'), intervalMs: 300_000 });
    expect(config.audit?.sinks).toEqual([
      {
        name: 'syslog',
        type: 'syslog',
        required: false,
        format: 'warden',
        spoolMaxBytes: 64 * 1024 * 1024,
        host: 'siem',
        port: 514,
        tls: false,
        facility: 13,
        appName: 'mcp-warden',
      },
      {
        name: 'otlp',
        type: 'otlp',
        required: true,
        format: 'ocsf',
        spoolMaxBytes: 64 * 1024 * 1024,
        endpoint: 'http://c:4318/v1/logs',
        headers: {},
      },
      {
        name: 'syslog-2',
        type: 'syslog',
        required: false,
        format: 'warden',
        spoolMaxBytes: 1024 * 1024,
        host: 'other',
        port: 6514,
        tls: true,
        ca: path.join(DIR, 'ca.pem'),
        facility: 13,
        appName: 'mcp-warden',
      },
    ]);
  });

  it('names each problem with its file, line and key', () => {
    const issues = issuesOf(
      [
        'audit:',
        '  file: a.jsonl',
        '  checkpoints: { key: k.key, interval: 0 }',
        '  sinks:',
        '    - { type: syslog, port: 514, endpoint: "http://x" }',
        '    - { type: otlp, endpoint: "ftp://x", name: dup }',
        '    - { type: syslog, host: h, port: 1, name: dup, ca: ca.pem }',
        'servers:',
        '  a: { command: x }',
        '',
      ].join('\n'),
    );
    expect(issues.join('\n')).toMatch(
      /proxy\.config\.yaml:3:\d+: audit\.checkpoints\.interval: must be more than 0/,
    );
    expect(issues.join('\n')).toMatch(/:5:\d+: audit\.sinks\[0\]: a syslog sink needs host/);
    expect(issues.join('\n')).toMatch(/:5:\d+: audit\.sinks\[0\]\.endpoint: applies to otlp sinks only/);
    expect(issues.join('\n')).toMatch(
      /:6:\d+: audit\.sinks\[1\]\.endpoint: not an http:\/\/ or https:\/\/ URL/,
    );
    expect(issues.join('\n')).toMatch(/:7:\d+: audit\.sinks\[2\]\.name: a second sink named "dup"/);
    expect(issues.join('\n')).toMatch(/:7:\d+: audit\.sinks\[2\]\.ca: applies with tls: true only/);
    expect(
      issuesOf('audit:\n  file: a\n  sinks: [{ type: kafka }]\nservers:\n  a: { command: x }\n'),
    ).toEqual([`${FILE}:3:19: audit.sinks[0].type: expected one of "syslog", "otlp", got "kafka"`]);
  });
});

describe('a trail without a local file', () => {
  const config = (audit: string[]) =>
    ['audit:', ...audit.map((line) => `  ${line}`), 'servers:', '  a: { command: x }', ''].join('\n');

  it('has no file, and its spools where audit.spool says', () => {
    const audit = parse(
      config(['file: false', 'spool: spool', 'sinks: [{ type: syslog, host: h, port: 1 }]']),
    ).audit;
    expect(audit?.file).toBeUndefined();
    expect(audit?.spoolDir).toBe(path.join(DIR, 'spool'));
    expect(parse(config(['file: a.jsonl'])).audit?.spoolDir).toBe(path.join(DIR, 'a.jsonl.spool'));
  });

  it('needs a sink and a spool folder, said at audit.file', () => {
    expect(issuesOf(config(['file: false']))).toEqual([
      `${FILE}:2:9: audit.file: false keeps no local file, so the records need a sink: add one to audit.sinks, or give a file`,
      `${FILE}:2:9: audit.file: false keeps no local file, so the sinks need audit.spool: a folder where records wait until each sink took them`,
    ]);
    expect(issuesOf(config(['file: true', 'spool: s']))[0]).toMatch(/^.*:2:9: audit\.file: /);
  });
});

describe('the spool', () => {
  it('remembers its newest record, also once emptied, for a trail without a file to go on from', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'warden-spool-'));
    const spool = new Spool(dir, 4 * 1024 * 1024);
    expect(spool.lastLine()).toBeUndefined();
    const big = (n: number) => `{"seq":${n},"pad":"${'p'.repeat(700 * 1024)}"}\n`;
    spool.append(big(0) + big(1), 2);
    expect(spool.lastLine()).toBe(big(1).trimEnd());
    for (let batch = spool.peek(); batch.lines.length > 0; batch = spool.peek()) spool.ack(batch);
    expect(spool.pending).toEqual({ records: 0, bytes: 0 });
    expect(spool.lastLine()).toBe(big(1).trimEnd());
    spool.close();
    expect(new Spool(dir, 100).lastLine()).toBe(big(1).trimEnd());
  });

  it('keeps records up to its bound, refuses more, and starts again once everything is sent', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'warden-spool-'));
    const spool = new Spool(dir, 100);
    const line = `${'x'.repeat(39)}\n`; // 40 bytes
    expect(spool.append(line + line, 2)).toBe(true);
    expect(spool.append(line, 1)).toBe(false);
    expect(spool.pending).toEqual({ records: 2, bytes: 80 });
    const first = spool.peek();
    expect(first.lines).toEqual(['x'.repeat(39), 'x'.repeat(39)]);
    spool.ack(first);
    expect(spool.pending).toEqual({ records: 0, bytes: 0 });
    expect(spool.append(line, 1)).toBe(true);
    spool.close();
    // A new run finds what waits.
    const again = new Spool(dir, 100);
    expect(again.pending.records).toBe(1);
    expect(Number(readFileSync(path.join(dir, 'sent'), 'utf8'))).toBe(80);
    again.close();
  });
});
