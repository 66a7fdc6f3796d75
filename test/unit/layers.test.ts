import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * The import rules of docs/architecture.md, checked on the source itself:
 *   lib/ imports nothing of ours; config/ only lib/; core/ only lib/ and config/;
 *   a feature only lib/, config/, core/ and its own folder; gateway, cli and commands anything.
 * Inside core/, each sub-folder imports only the sub-layers below it (CORE_MAY_IMPORT).
 * And no import cycle anywhere, type-only imports included (they still couple the modules), nor
 * among core's sub-folders taken as wholes.
 */

const SRC = path.resolve(import.meta.dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sources(file);
    return name.endsWith('.ts') ? [file] : [];
  });
}

/** The relative imports of a module, as paths of .ts files under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const found: string[] = [];
  for (const match of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
    const target = path.resolve(path.dirname(file), match[1]!).replace(/\.js$/, '.ts');
    found.push(target);
  }
  return found;
}

/** `lib`, `config`, `core`, `feature:<name>` or `top`. */
function layerOf(file: string): string {
  const [first, second] = path.relative(SRC, file).split(path.sep);
  if (first === 'lib' || first === 'config' || first === 'core') return first;
  if (first === 'features') return `feature:${second}`;
  return 'top';
}

const MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  lib: ['lib'],
  config: ['lib', 'config'],
  core: ['lib', 'config', 'core'],
};

function allowed(from: string, to: string): boolean {
  if (from === 'top') return true;
  if (from.startsWith('feature:')) return ['lib', 'config', 'core', from].includes(to);
  return MAY_IMPORT[from]!.includes(to);
}

/**
 * Core's sub-layers, bottom first, and what each may import besides itself. The files at core's
 * root (errors, logger, principal, events) are the base every sub-layer may use; they import no
 * sub-folder. host/ and upstreams/ sit side by side: neither imports the other.
 */
const CORE_MAY_IMPORT: Readonly<Record<string, readonly string[]>> = {
  '(root)': [],
  protocol: ['(root)'],
  rpc: ['(root)', 'protocol'],
  transports: ['(root)', 'protocol', 'rpc'],
  host: ['(root)', 'protocol', 'rpc', 'transports'],
  upstreams: ['(root)', 'protocol', 'rpc', 'transports'],
  pipeline: ['(root)', 'protocol', 'rpc', 'transports', 'host', 'upstreams'],
  catalog: ['(root)', 'protocol', 'rpc', 'transports', 'host', 'upstreams', 'pipeline'],
  tasks: ['(root)', 'protocol', 'rpc', 'transports', 'host', 'upstreams', 'pipeline', 'catalog'],
  routing: ['(root)', 'protocol', 'rpc', 'transports', 'host', 'upstreams', 'pipeline', 'catalog', 'tasks'],
};

/** The core sub-folder a file is in (`(root)` for core's own files); undefined outside core/. */
function coreLayerOf(file: string): string | undefined {
  const parts = path.relative(SRC, file).split(path.sep);
  if (parts[0] !== 'core') return undefined;
  return parts.length > 2 ? parts[1] : '(root)';
}

/** The cycles of a directed graph, one per strongly connected part with more than one node. */
function cyclesOf(edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const part: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      part.push(member);
    } while (member !== node);
    if (part.length > 1) found.push(part.sort());
  };
  for (const node of edges.keys()) if (!index.has(node)) connect(node);
  return found;
}

const files = sources(SRC);
const graph = new Map(files.map((f) => [f, importsOf(f)]));

describe('layers', () => {
  it('every import points down a layer, or stays inside its own folder', () => {
    const wrong: string[] = [];
    for (const [file, targets] of graph) {
      for (const target of targets) {
        if (!allowed(layerOf(file), layerOf(target)))
          wrong.push(`${path.relative(SRC, file)} → ${path.relative(SRC, target)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("every import inside core/ points down core's sub-layers, or stays in its own folder", () => {
    const wrong: string[] = [];
    for (const [file, targets] of graph) {
      const from = coreLayerOf(file);
      if (from === undefined) continue;
      for (const target of targets) {
        const to = coreLayerOf(target);
        if (to === undefined || to === from) continue;
        const may = CORE_MAY_IMPORT[from];
        if (may === undefined || !may.includes(to))
          wrong.push(`${path.relative(SRC, file)} → ${path.relative(SRC, target)} (${from} → ${to})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('places every core sub-folder in the table of sub-layers', () => {
    const folders = new Set(files.flatMap((f) => coreLayerOf(f) ?? []));
    expect([...folders].filter((f) => !(f in CORE_MAY_IMPORT))).toEqual([]);
  });

  it("has no cycle among core's sub-folders", () => {
    const edges = new Map<string, Set<string>>();
    for (const [file, targets] of graph) {
      const from = coreLayerOf(file);
      if (from === undefined) continue;
      const out = edges.get(from) ?? new Set<string>();
      edges.set(from, out);
      for (const target of targets) {
        const to = coreLayerOf(target);
        if (to !== undefined && to !== from) out.add(to);
      }
    }
    expect(cyclesOf(edges)).toEqual([]);
  });

  it('has no import cycle', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (file: string): void => {
      state.set(file, 'open');
      stack.push(file);
      for (const target of graph.get(file) ?? []) {
        if (state.get(target) === 'open') {
          const loop = stack.slice(stack.indexOf(target)).map((f) => path.relative(SRC, f));
          cycles.push(loop.join(' → '));
        } else if (!state.has(target) && graph.has(target)) visit(target);
      }
      stack.pop();
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });

  it('every import names a file that exists', () => {
    const missing = [...graph].flatMap(([file, targets]) =>
      targets.filter((t) => !graph.has(t)).map((t) => `${path.relative(SRC, file)} → ${t}`),
    );
    expect(missing).toEqual([]);
  });
});
