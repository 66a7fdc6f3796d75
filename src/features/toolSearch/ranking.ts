import { createRequire } from 'node:module';
import type MiniSearchClass from 'minisearch';
import { LEADING_WORDS, RELATED_WORDS } from './synonyms.js';
import { splitWords, termOf, termsOf } from './terms.js';

/**
 * The full-text library, loaded on the first index built, synchronously (its CommonJS build):
 * every gateway loads this module, most never search, and the library is the largest module a
 * stdio gateway would otherwise load at start (measured: about 7 ms of CPU).
 */
let miniSearch: typeof MiniSearchClass | undefined;
function miniSearchClass(): typeof MiniSearchClass {
  return (miniSearch ??= createRequire(import.meta.url)('minisearch') as typeof MiniSearchClass);
}

/** One tool as the search sees it: its namespaced name, its server, and what describes it. */
export interface SearchableTool {
  /** The name the host calls it by (namespaced). */
  readonly name: string;
  readonly server: string;
  readonly title?: string;
  readonly description?: string;
  readonly inputSchema?: unknown;
}

export interface RankOptions {
  /** How many tools to return at most. */
  readonly limit: number;
  /** Only tools of these servers; absent: all. */
  readonly servers?: readonly string[];
}

export interface RankedTool {
  readonly name: string;
  readonly server: string;
  readonly score: number;
}

/** A built index over one catalogue; rebuild it when the catalogue changes. */
export interface ToolRanking {
  readonly size: number;
  search(query: string, options: RankOptions): readonly RankedTool[];
}

interface Doc {
  readonly id: number;
  readonly name: string;
  readonly title: string;
  readonly summary: string;
  readonly description: string;
  readonly params: string;
}

/**
 * How much a match in each part of a tool counts. The name is what the tool is; the title and
 * the first sentence of the description say what it does; the rest of the description often
 * explains how, in words shared with many tools; parameter names and descriptions say what it
 * takes, which matches many questions loosely.
 */
const FIELD_BOOST = { name: 3, title: 2, summary: 2, description: 0.5, params: 0.3 } as const;
/**
 * A word the question did not use but that stands for one it did counts for less: an
 * equivalent ("directory" for folder) nearly as much, a loose relation ("describe" for
 * details) half as much.
 */
const SAME_WEIGHT = 0.9;
const RELATED_WEIGHT = 0.65;
/**
 * A long word may be mistyped by one letter ("screnshot"); a short one is too often another
 * word one letter away.
 */
const FUZZY_FROM_LENGTH = 5;
/** The tools of a server the question names count this much more. */
const SERVER_BOOST = 1.5;
/** Longer descriptions are cut here: past it they explain usage, not purpose. */
const DESCRIPTION_CHARS = 1000;

/**
 * Ranks a catalogue's tools against a question in plain words. A maintained full-text library
 * (BM25-style scoring with field boosts, prefix and fuzzy matching) does the ranking; what is ours is
 * which parts of a tool it reads, how words become terms (see terms.ts), and how a question is
 * widened with the catalogue's own words for what the user said (see synonyms.ts).
 */
export function rankTools(tools: readonly SearchableTool[]): ToolRanking {
  const docs: Doc[] = tools.map((tool, id) => {
    const description = tool.description ?? '';
    return {
      id,
      name: tool.name,
      title: tool.title ?? '',
      summary: firstSentence(description),
      description: description.slice(0, DESCRIPTION_CHARS),
      params: parameterText(tool.inputSchema),
    };
  });
  // Every word met while indexing, and its term: a catalogue repeats its words many times
  // over, and the keys are the catalogue's vocabulary.
  const termOfWord = new Map<string, string | null>();
  const MiniSearch = miniSearchClass();
  const index = new MiniSearch<Doc>({
    fields: ['name', 'title', 'summary', 'description', 'params'],
    storeFields: [],
    tokenize: splitWords,
    processTerm: (word) => {
      let term = termOfWord.get(word);
      if (term === undefined) {
        term = termOf(word);
        termOfWord.set(word, term);
      }
      return term;
    },
  });
  index.addAll(docs);
  const vocabulary = new Set<string>();
  for (const term of termOfWord.values()) if (term !== null) vocabulary.add(term);
  const serverTerms = serverTermsOf(tools);
  const widen = expander(vocabulary);

  return {
    size: docs.length,
    search(query, options) {
      const asked = termsOf(query);
      const { terms, weight, standsFor } = widen(asked);
      if (terms.length === 0) return [];
      const named = namedServers(asked, serverTerms);
      const servers = options.servers === undefined ? undefined : new Set(options.servers);
      const hits = index.search(terms.join(' '), {
        combineWith: 'OR',
        boost: FIELD_BOOST,
        // The question's terms are already processed: searching them again would stem twice.
        tokenize: (text) => text.split(' '),
        processTerm: (term) => term,
        prefix: (term) => term.length >= 4,
        fuzzy: (term) => (term.length >= FUZZY_FROM_LENGTH ? 1 : false),
        boostTerm: (term) => weight.get(term) ?? 1,
        ...(named.size === 0
          ? {}
          : { boostDocument: (id: number) => (named.has(tools[id]?.server ?? '') ? SERVER_BOOST : 1) }),
        ...(servers === undefined
          ? {}
          : { filter: (hit) => servers.has(tools[hit.id as number]?.server ?? '') }),
      });
      const ranked: RankedTool[] = [];
      for (const hit of hits) {
        const tool = tools[hit.id as number];
        if (tool === undefined) continue;
        const score = (hit.score / Math.max(1, hit.queryTerms.length)) * coverage(hit.queryTerms, standsFor);
        ranked.push({ name: tool.name, server: tool.server, score });
      }
      return ranked.sort((a, b) => b.score - a.score).slice(0, options.limit);
    },
  };
}

/** A question as searched: its terms and, for each, how much it counts and what it stands for. */
interface Widened {
  readonly terms: readonly string[];
  /** Below 1 for a related word the user did not say. */
  readonly weight: ReadonlyMap<string, number>;
  /** The user's own terms each searched term stands for. */
  readonly standsFor: ReadonlyMap<string, readonly string[]>;
}

type Related = ReadonlyMap<string, readonly { readonly term: string; readonly weight: number }[]>;

/**
 * Widens a question with the catalogue's words for what the user said: each term that stands
 * for others (synonyms.ts) brings those of them that some tool uses, an equivalent at the
 * weight of the user's own word and a looser relation at less. A related word the catalogue
 * never uses is left out: it could match nothing, and a prefix of it could match something
 * unrelated.
 */
function expander(vocabulary: ReadonlySet<string>): (asked: readonly string[]) => Widened {
  const compile = (table: typeof RELATED_WORDS): Related => {
    const related = new Map<string, { term: string; weight: number }[]>();
    for (const [word, others] of table) {
      const term = termOf(word);
      if (term === null) continue;
      const list = related.get(term) ?? [];
      for (const other of others) {
        const otherTerm = termOf(other.word);
        if (otherTerm === null || otherTerm === term || !vocabulary.has(otherTerm)) continue;
        list.push({ term: otherTerm, weight: other.same ? SAME_WEIGHT : RELATED_WEIGHT });
      }
      if (list.length > 0) related.set(term, list);
    }
    return related;
  };
  const anywhere = compile(RELATED_WORDS);
  const leading = compile(LEADING_WORDS);
  return (asked) => {
    const own = [...new Set(asked)];
    const weight = new Map<string, number>();
    const standsFor = new Map<string, string[]>(own.map((term) => [term, [term]]));
    own.forEach((term, position) => {
      const related = [...(anywhere.get(term) ?? []), ...(position === 0 ? (leading.get(term) ?? []) : [])];
      for (const other of related) {
        if (own.includes(other.term)) continue;
        weight.set(other.term, Math.max(weight.get(other.term) ?? 0, other.weight));
        standsFor.set(other.term, [...(standsFor.get(other.term) ?? []), term]);
      }
    });
    return { terms: [...standsFor.keys()], weight, standsFor };
  };
}

/**
 * How many of the user's own terms a hit covers, directly or through a word that stands for
 * one. The library multiplies a hit's score by the number of searched terms it matched; a
 * question widened with related words would otherwise favour a tool matching two words for
 * one thing over a tool matching two things the user asked for.
 */
function coverage(matched: readonly string[], standsFor: ReadonlyMap<string, readonly string[]>): number {
  const covered = new Set<string>();
  for (const term of matched) for (const own of standsFor.get(term) ?? []) covered.add(own);
  return covered.size;
}

/** Each server's name as terms: `google-maps` is named by "google" or "maps". */
function serverTermsOf(tools: readonly SearchableTool[]): Map<string, string[]> {
  const byServer = new Map<string, string[]>();
  for (const tool of tools)
    if (!byServer.has(tool.server))
      byServer.set(tool.server, [...termsOf(tool.server), tool.server.toLowerCase()]);
  return byServer;
}

/** The servers whose name the question uses. */
function namedServers(asked: readonly string[], serverTerms: ReadonlyMap<string, string[]>): Set<string> {
  const named = new Set<string>();
  for (const [server, terms] of serverTerms)
    if (terms.some((term) => asked.includes(term))) named.add(server);
  return named;
}

/** What a description says first: up to its first full stop or line break. */
function firstSentence(description: string): string {
  const end = description.search(/[.!?](?:\s|$)|\n/);
  return end === -1 ? description : description.slice(0, end);
}

/** The names, descriptions and accepted values of a tool's top-level parameters. */
function parameterText(schema: unknown): string {
  if (typeof schema !== 'object' || schema === null) return '';
  const properties = (schema as { properties?: unknown }).properties;
  if (typeof properties !== 'object' || properties === null) return '';
  const parts: string[] = [];
  for (const [key, value] of Object.entries(properties)) {
    parts.push(key);
    const { description, enum: values } = (value ?? {}) as { description?: unknown; enum?: unknown };
    if (typeof description === 'string') parts.push(description);
    // The values an argument accepts are words the tool understands: `state: open | closed`.
    if (Array.isArray(values)) for (const v of values) if (typeof v === 'string') parts.push(v);
  }
  return parts.join(' ');
}
