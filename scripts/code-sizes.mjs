// Counts the lines of every class and function in src/ with the TypeScript compiler, and lists
// those over the limits the project keeps (classes 400 lines, functions 80 lines).
// Usage: node scripts/code-sizes.mjs [--all]
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const CLASS_LIMIT = 400;
const FUNCTION_LIMIT = 80;
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', 'src');
const all = process.argv.includes('--all');

function* files(dir) {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) yield* files(full);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) yield full;
  }
}

const classes = [];
const functions = [];
for (const file of files(root)) {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const where = (node) => {
    const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
    const end = source.getLineAndCharacterOfPosition(node.getEnd()).line + 1;
    return { file: path.relative(path.dirname(root), file), line: start, lines: end - start + 1 };
  };
  const nameOf = (node) => {
    if (node.name !== undefined) return node.name.getText(source);
    const parent = node.parent;
    if (
      ts.isVariableDeclaration(parent) ||
      ts.isPropertyAssignment(parent) ||
      ts.isPropertyDeclaration(parent)
    )
      return parent.name.getText(source);
    return '(anonymous)';
  };
  const visit = (node) => {
    if (ts.isClassDeclaration(node) || ts.isClassExpression(node))
      classes.push({ name: nameOf(node), ...where(node) });
    else if (
      ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isArrowFunction(node) ||
      ts.isFunctionExpression(node)
    )
      functions.push({
        name: ts.isConstructorDeclaration(node) ? 'constructor' : nameOf(node),
        ...where(node),
      });
    ts.forEachChild(node, visit);
  };
  visit(source);
}

const show = (list, limit, what) => {
  const over = list.filter((entry) => entry.lines > limit).sort((a, b) => b.lines - a.lines);
  process.stdout.write(`${what} over ${limit} lines: ${over.length} (of ${list.length})\n`);
  for (const e of all ? [...list].sort((a, b) => b.lines - a.lines).slice(0, 20) : over)
    process.stdout.write(`  ${String(e.lines).padStart(4)}  ${e.name}  ${e.file}:${e.line}\n`);
};
show(classes, CLASS_LIMIT, 'classes');
show(functions, FUNCTION_LIMIT, 'functions');
