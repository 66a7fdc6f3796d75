import path from 'node:path';
import { writeFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { RpcChild } from '/work/main/bench/lib/client.mjs';
export const FIXTURE = '/work/main/bench/fixture/server.mjs';
export const POLICY = { default: 'allow', rules: [
 { id: 'no-deletes', match: { tool: 'delete_*' }, action: 'deny', reason: 'x' },
 { id: 'other', match: { server: 'prod-*' }, action: 'deny', reason: 'x' },
 { id: 'no-etc', match: { tool: 'write_*', arguments: { properties: { path: { pattern: '^/etc/' } } } }, action: 'deny', reason: 'x' },
 { id: 'probe', match: { server: 'bench', tool: 'echo', arguments: { properties: { text: { const: 'deny me' } }, required: ['text'] } }, action: 'deny', reason: 'x' },
 { id: 'bench', match: { server: 'bench', tool: '*' }, action: 'allow' } ] };
export function configFor(mode, dir) {
  writeFileSync(path.join(dir, 'p.json'), JSON.stringify(POLICY));
  const fx = { command: process.execPath, args: [FIXTURE, '--tools', '0'] };
  if (mode === 'defaults') return { servers: { bench: fx } };
  if (mode === 'full-noaudit') return { servers: { bench: fx }, policies: ['./p.json'] };
  if (mode === 'audit-shm') return { servers: { bench: fx }, audit: { file: `/dev/shm/wexp-${process.pid}-${Date.now()}.jsonl` } };
  if (mode === 'full-nopolicy') return { servers: { bench: fx }, audit: { file: path.join(dir, 'audit.jsonl') } };
  return mode === 'bare'
    ? { gateway: { repair: { textForStructured: false, invalidStructured: 'off', structuredFromText: false, missingStructured: 'off' }, log: { level: 'error' } }, servers: { bench: { ...fx, maxConcurrency: 64, maxQueue: 1024 } } }
    : { servers: { bench: fx }, policies: ['./p.json'], audit: { file: path.join(dir, 'audit.jsonl') } };
}
export async function start(mode, cli = '/work/main/dist/cli.js') {
  const dir = mkdtempSync(path.join(tmpdir(), 'wexp-'));
  writeFileSync(path.join(dir, 'c.json'), JSON.stringify(configFor(mode, dir)));
  const target = mode === 'direct' ? [FIXTURE, '--tools', '0'] : mode === 'pipe' ? ['/work/main/bench/pipe.mjs', process.execPath, FIXTURE, '--tools', '0']
    : [...(process.env.PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.PROF] : []), cli, '--config', path.join(dir, 'c.json')];
  const spec = process.env.STRACE ? { command: 'strace', args: ['-c', '-o', process.env.STRACE, process.execPath, ...target] } : { command: process.execPath, args: target };
  const child = new RpcChild({ label: mode, ...spec, env: process.env });
  await child.request('initialize', JSON.stringify({ protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } }));
  child.notify('notifications/initialized');
  await child.request('tools/list');
  return { child, prefix: mode === 'direct' || mode === 'pipe' ? '' : 'bench__' };
}
export const med = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
