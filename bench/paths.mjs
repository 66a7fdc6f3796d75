#!/usr/bin/env node
// What the `paths` condition costs per tool call. Runs the compiled condition, and the whole
// policy decision under policies/locked-down-org.yaml, on typical filesystem-tool arguments in
// a temp home, N times each, and prints microseconds per call. For comparison: the same decision
// with the path rules taken out, the lexical part alone (path.resolve), and realpath alone, which
// is what a symlink cache could save at most.
//
//   npm run build && node bench/paths.mjs [N]

import { mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createPolicyEngine } from '../dist/features/policy/engine.js';
import { combinePolicyFiles, parsePolicyText } from '../dist/features/policy/loadPolicies.js';
import { compilePathCondition } from '../dist/features/policy/paths.js';

const N = Number(process.argv[2] ?? 20_000);
const home = mkdtempSync(path.join(os.tmpdir(), 'warden-bench-paths-'));
mkdirSync(path.join(home, '.ssh'));
mkdirSync(path.join(home, 'project', 'src', 'lib'), { recursive: true });
writeFileSync(path.join(home, 'project', 'src', 'lib', 'a.ts'), '');
symlinkSync(path.join(home, '.ssh'), path.join(home, 'keys'));
process.env.HOME = home;

const calls = {
  'read_text_file (1 path)': {
    tool: 'read_text_file',
    args: { path: path.join(home, 'project/src/lib/a.ts') },
  },
  'read_multiple_files (3 paths)': {
    tool: 'read_multiple_files',
    args: { paths: ['~/project/src/lib/a.ts', '~/project/README.md', '~/project/src/lib/../index.ts'] },
  },
  'search_files (path + pattern)': {
    tool: 'search_files',
    args: { path: path.join(home, 'project'), pattern: '**/*.ts', excludePatterns: ['node_modules'] },
  },
};

function time(label, fn) {
  for (let i = 0; i < Math.min(N, 2000); i++) fn(); // warm up
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) fn();
  const us = Number(process.hrtime.bigint() - start) / 1000 / N;
  process.stdout.write(`${label.padEnd(62)} ${us.toFixed(2).padStart(8)} µs/call\n`);
  return us;
}

const condition = compilePathCondition(
  {
    under: ['~/.ssh', '~/.aws', '~/.gnupg', '~/.kube', '~/.config/gcloud'],
    includingAncestors: false,
    pathArguments: null,
  },
  { homedir: home },
);
const policyText = readFileSync(new URL('../policies/locked-down-org.yaml', import.meta.url), 'utf8');
const withPaths = createPolicyEngine(
  combinePolicyFiles([parsePolicyText(policyText, 'locked-down-org.yaml')]),
);
// The same file without the two path rules: what deciding cost before them.
const withoutText = policyText.replace(
  / {2}- id: no-credential-paths[\s\S]*?(?= {2}- id: approved-file-reads)/,
  '',
);
const without = createPolicyEngine(
  combinePolicyFiles([parsePolicyText(withoutText, 'locked-down-org.yaml')]),
);

process.stdout.write(`N = ${N}, node ${process.version}, ${os.cpus().length} cpus\n`);
for (const [label, { tool, args }] of Object.entries(calls)) {
  process.stdout.write(`\n${label}\n`);
  const input = (a) => ({ server: 'fs', tool, annotations: undefined, trusted: false, arguments: a });
  time('  paths condition alone (lexical + realpath per path)', () => condition.test(args));
  const strings =
    JSON.stringify(args)
      .match(/"[~/][^"]*"/g)
      ?.map((s) => s.slice(1, -1).replace(/^~/, home)) ?? [];
  time('  path.resolve of each path (lexical only, no symlinks)', () => strings.map((s) => path.resolve(s)));
  time('  realpath of each path (the part a cache could save)', () =>
    strings.map((s) => {
      try {
        return realpathSync.native(path.resolve(s));
      } catch {
        return null;
      }
    }),
  );
  const a = time('  decide, locked-down-org.yaml', () => withPaths.decide(input(args)));
  const b = time('  decide, locked-down-org.yaml without the path rules', () => without.decide(input(args)));
  process.stdout.write(`  ratio with / without path rules: ${(a / b).toFixed(1)}x\n`);
}
