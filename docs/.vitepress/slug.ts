/**
 * The anchor of a Markdown heading, by GitHub's rule: the heading's text (link targets and
 * inline markup dropped), lower case, every character that is not a letter, digit, space,
 * hyphen or underscore removed, then each space a hyphen. The docs site uses this same function
 * for its anchors, so a link like `page.md#some-heading` works on GitHub and on the site alike,
 * and the link test checks anchors with it.
 */
export function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/**
 * The anchors of every heading in a Markdown text, in order. A heading whose slug was taken
 * before gets `-1`, `-2`, … as on GitHub (and in markdown-it-anchor, which the site uses).
 * Fenced code is not looked at, so a `# comment` in a shell block is not a heading.
 */
export function headingAnchors(markdown: string): string[] {
  const seen = new Map<string, number>();
  const anchors: string[] = [];
  for (const match of withoutFences(markdown).matchAll(/^#{1,6} +(.+?)#*\s*$/gm)) {
    const base = slug(match[1]!);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.push(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** The text with fenced code blocks (``` or ~~~) blanked out, line count kept. */
export function withoutFences(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, (block) => block.replace(/[^\n]/g, ''));
}
