/**
 * The user-facing documents hold together: every relative link names a file that exists and, with
 * a #fragment, a heading in it (by the slug rule GitHub and the docs site share); and the README
 * keeps its two newcomer commands, the same as CI and package.json run.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { headingAnchors, withoutFences } from '../../docs/.vitepress/slug.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Every Markdown file under docs/, the site's build output and cache left out. */
function markdownUnder(folder: string): string[] {
  return readdirSync(path.join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.posix.join(folder, entry.name);
    if (entry.isDirectory()) {
      return ['docs/.vitepress/dist', 'docs/.vitepress/cache'].includes(relative)
        ? []
        : markdownUnder(relative);
    }
    return entry.name.endsWith('.md') ? [relative] : [];
  });
}

const DOCUMENTS = [
  'README.md',
  'CHANGELOG.md',
  'bench/README.md',
  'policies/README.md',
  ...markdownUnder('docs'),
];

/**
 * The relative links of a Markdown text that fail: a target file that does not exist, or a
 * #fragment that is no heading of the Markdown file it names. Links in fenced or inline code are
 * not links; `http:`, `mailto:` and the like are not checked.
 */
function brokenLinks(file: string, text: string): string[] {
  const prose = withoutFences(text).replace(/`[^`\n]*`/g, '');
  const links = [...prose.matchAll(/\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((link) => !/^[a-z][a-z0-9+.-]*:/i.test(link));
  return links.filter((link) => {
    const hash = link.indexOf('#');
    const target = hash === -1 ? link : link.slice(0, hash);
    const fragment = hash === -1 ? undefined : decodeURIComponent(link.slice(hash + 1));
    if (target === '') return fragment !== undefined && !headingAnchors(text).includes(fragment);
    const linked = path.resolve(path.dirname(file), decodeURIComponent(target));
    if (!existsSync(linked)) return true;
    if (fragment === undefined || fragment === '') return false;
    if (!linked.endsWith('.md') || statSync(linked).isDirectory()) return true;
    return !headingAnchors(readFileSync(linked, 'utf8')).includes(fragment);
  });
}

describe('the link checker', () => {
  // The checker must be able to fail: a missing file, a missing heading, a heading of another
  // file, and GitHub's numbering of a repeated heading.
  const file = path.join(ROOT, 'docs/reference/cli.md');
  const text = [
    '# A page',
    '## Twice',
    '## Twice',
    '```sh',
    '# not a heading',
    '```',
    '[ok](#a-page) [ok](#twice-1) [ok](configuration.md) [ok](../../README.md#quick-start)',
    '[gone](no-such-page.md) [bad](#not-a-heading) [bad](#twice-2) [bad](../../README.md#no-such-heading)',
    '`[code](not-a-link.md)` [web](https://example.com/x#y)',
  ].join('\n');
  it('names a missing file, a missing heading, and nothing else', () => {
    expect(brokenLinks(file, text)).toEqual([
      'no-such-page.md',
      '#not-a-heading',
      '#twice-2',
      '../../README.md#no-such-heading',
    ]);
  });
});

describe.each(DOCUMENTS)('%s', (document) => {
  const file = path.join(ROOT, document);

  it('links only to files and headings that exist', () => {
    expect(brokenLinks(file, readFileSync(file, 'utf8'))).toEqual([]);
  });
});

describe('README.md', () => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

  it('keeps the newcomer commands: install and demo, and the tests', () => {
    expect(readme).toContain('npm install && npm run demo');
    expect(readme).toMatch(/^npm test\b/m);
  });

  it('gives the commands CI and package.json run', () => {
    const ci = readFileSync(path.join(ROOT, '.ci/run'), 'utf8');
    expect(ci.trim().split('\n').at(-1)).toBe('npm test');
    const scripts = (
      JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
        scripts: Record<string, string>;
      }
    ).scripts;
    expect(scripts.demo).toMatch(/^npm run build && node scripts\/demo\.mjs$/);
    expect(scripts.test).toBeDefined();
  });

  it('stays short: at most 400 lines', () => {
    expect(readme.split('\n').length).toBeLessThanOrEqual(401);
  });
});

describe('docs/reference/configuration.md', () => {
  // Every key the config's JSON Schema accepts, at the top and one level down (a server entry's
  // keys included), is named on the configuration page, so the reference cannot fall behind
  // the schema without this failing.
  interface SchemaNode {
    properties?: Record<string, SchemaNode>;
    definitions?: Record<string, SchemaNode>;
    oneOf?: SchemaNode[];
    anyOf?: SchemaNode[];
    allOf?: SchemaNode[];
  }
  const schema = JSON.parse(
    readFileSync(path.join(ROOT, 'schema/proxy.config.schema.json'), 'utf8'),
  ) as SchemaNode;
  const keysOf = (node: SchemaNode | undefined): string[] =>
    node === undefined
      ? []
      : [
          ...Object.keys(node.properties ?? {}),
          ...[...(node.oneOf ?? []), ...(node.anyOf ?? []), ...(node.allOf ?? [])].flatMap(keysOf),
        ];
  const sections = Object.entries(schema.properties ?? {}).filter(([key]) => key !== '$schema');
  const expected = [
    ...sections.map(([key]) => key),
    ...sections.flatMap(([key, node]) => keysOf(node).map((sub) => `${key}.${sub}`)),
    ...keysOf(schema.definitions?.server).map((key) => `servers.<name>.${key}`),
  ];

  it('names every key of the config schema', () => {
    expect(expected).toEqual(expect.arrayContaining(['auth.clockSkew', 'servers.<name>.shared']));
    const page = readFileSync(path.join(ROOT, 'docs/reference/configuration.md'), 'utf8');
    const missing = expected.filter((key) => !new RegExp(`\\b${key.split('.').at(-1)}\\b`).test(page));
    expect(missing).toEqual([]);
  });
});
