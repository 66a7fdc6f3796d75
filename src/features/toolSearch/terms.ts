/**
 * How the words of a tool definition and of a question become search terms: split where code
 * joins words (snake_case, camelCase, kebab-case), lower-cased, stripped of words that carry no
 * meaning, and reduced to a common stem so that "creating", "created" and "creates" meet.
 */

/** Words that say nothing about what a tool does; dropped from tools and questions alike. */
const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    'a an the and or nor but of to in on at for from by with into onto about as via per ' +
    'is are was were be been being am it its this that these those there here ' +
    'i me my mine we our us you your he she him her they them their ' +
    'what which who whom whose how when where why ' +
    'can could would should will shall may might must do does did done doing ' +
    'please some any just so than then if else also very only too ' +
    'want need like let lets up out tool tools use using used'
  ).split(' '),
);

/** `github__create_issue`, `createIssue` and `API-post-search` read as separate words. */
export function splitWords(text: string): string[] {
  return text
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 1);
}

/** The term a word is indexed and searched under, or null for a stop word. */
export function termOf(word: string): string | null {
  return STOP_WORDS.has(word) ? null : stem(word);
}

/**
 * A light suffix stripper: plurals, -ly, -ing, -ed, -ion and a final e. It is deliberately less
 * eager than a full Porter stemmer: tool vocabulary is short and technical, and an over-eager
 * stemmer merges words that mean different things (a "node" is not a "no").
 */
export function stem(word: string): string {
  let w = word;
  if (w.length <= 3 || /\d/.test(w)) return w;
  if (w.endsWith('ies') && w.length > 4) w = w.slice(0, -3) + 'y';
  else if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (/(?:ch|sh|x|z)es$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith('s') && !/(?:ss|us|is)$/.test(w)) w = w.slice(0, -1);
  if (w.endsWith('ly') && w.length >= 7) w = w.slice(0, -2);
  for (const suffix of ['ing', 'ed']) {
    const base = w.slice(0, -suffix.length);
    if (w.endsWith(suffix) && base.length >= 3 && /[aeiouy]/.test(base)) {
      w = /([^aeiouylsz])\1$/.test(base) ? base.slice(0, -1) : base;
      break;
    }
  }
  if (w.endsWith('ation') && w.length > 6) w = w.slice(0, -3);
  else if (/[st]ion$/.test(w) && w.length > 5) w = w.slice(0, -3);
  // A long word's -al, -er and -ment ("approval", "container", "environment") join its stem.
  if (w.length > 7) w = w.replace(/(?:al|er|ment)$/, '');
  if (w.endsWith('e') && w.length > 3) w = w.slice(0, -1);
  return w;
}

/** The search terms of a text, in order, stop words dropped. */
export function termsOf(text: string): string[] {
  const terms: string[] = [];
  for (const word of splitWords(text)) {
    const term = termOf(word);
    if (term !== null) terms.push(term);
  }
  return terms;
}
