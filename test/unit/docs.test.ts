/**
 * The user-facing documents hold together: every relative link names a file that exists and, with
 * a #fragment, a heading in it; and the README keeps its two newcomer commands.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DOCUMENTS = [
  'README.md',
  'CHANGELOG.md',
  'docs/how-it-behaves.md',
  'docs/host-config-files.md',
  'bench/README.md',
  'policies/README.md',
];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes. */
function anchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchors(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!)));
}

describe.each(DOCUMENTS)('%s', (document) => {
  const file = path.join(ROOT, document);
  const text = readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '');
  const links = [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((link) => !/^[a-z]+:/.test(link));

  it('links only to files and headings that exist', () => {
    const broken = links.filter((link) => {
      const [target, fragment] = link.split('#') as [string, string | undefined];
      const linked = target === '' ? file : path.resolve(path.dirname(file), target);
      if (!existsSync(linked)) return true;
      return fragment !== undefined && linked.endsWith('.md') && !anchors(linked).has(fragment);
    });
    expect(broken).toEqual([]);
  });
});

describe('README.md', () => {
  it('keeps the newcomer commands: install and demo, and the tests', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    expect(readme).toContain('npm install && npm run demo');
    expect(readme).toMatch(/^npm test\b/m);
  });
});
