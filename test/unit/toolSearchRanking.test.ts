import { describe, expect, it } from 'vitest';
import { rankTools, type SearchableTool } from '../../src/features/toolSearch/ranking.js';
import { splitWords, stem, termsOf } from '../../src/features/toolSearch/terms.js';

const tools = [
  { name: 'github__create_issue', server: 'github', description: 'Open a new issue in a repository' },
  { name: 'github__list_pull_requests', server: 'github', description: 'List pull requests' },
  {
    name: 'fs__read_file',
    server: 'fs',
    description: 'Read the contents of a file',
    inputSchema: { type: 'object', properties: { path: { description: 'Path of the file' } } },
  },
  { name: 'fs__write_file', server: 'fs', description: 'Write text to a file' },
];

/** The names of the first `limit` tools for `query`. */
function top(catalogue: readonly SearchableTool[], query: string, limit = 3): string[] {
  return rankTools(catalogue)
    .search(query, { limit })
    .map((hit) => hit.name);
}

describe('rankTools', () => {
  it('puts the tool whose words match the question first', () => {
    expect(top(tools, 'open an issue')[0]).toBe('github__create_issue');
    expect(top(tools, 'read contents of a file')[0]).toBe('fs__read_file');
  });

  it('keeps to the servers asked for and to the limit', () => {
    const ranking = rankTools(tools);
    const hits = ranking.search('file issue', { limit: 5, servers: ['fs'] });
    expect(hits.every((hit) => hit.server === 'fs')).toBe(true);
    expect(ranking.search('file', { limit: 1 })).toHaveLength(1);
  });

  it('reads snake, camel and kebab case names as words', () => {
    const catalogue = [
      { name: 'gh__listPullRequests', server: 'gh' },
      { name: 'notion__API-post-search', server: 'notion' },
      { name: 'k8s__port_forward', server: 'k8s' },
    ];
    expect(top(catalogue, 'pull requests')).toEqual(['gh__listPullRequests']);
    expect(top(catalogue, 'search')).toEqual(['notion__API-post-search']);
    expect(top(catalogue, 'forward a port')).toEqual(['k8s__port_forward']);
  });

  it('meets a word in another form: plurals, -ing, -ed, -ion, -ly', () => {
    const catalogue = [
      { name: 'a__create_directory', server: 'a', description: 'Create a directory' },
      { name: 'a__list_recent', server: 'a', description: 'Messages sent recently' },
      { name: 'a__delete_entity', server: 'a', description: 'Delete one entity' },
    ];
    expect(top(catalogue, 'creating directories')[0]).toBe('a__create_directory');
    expect(top(catalogue, 'deletion of entities')[0]).toBe('a__delete_entity');
    expect(top(catalogue, 'recent message')[0]).toBe('a__list_recent');
  });

  it('forgives one mistyped letter in a long word, not in a short one', () => {
    const catalogue = [
      { name: 'a__take_screenshot', server: 'a', description: 'Take a screenshot' },
      { name: 'a__get_tag', server: 'a', description: 'Get a tag' },
    ];
    expect(top(catalogue, 'screnshot')).toEqual(['a__take_screenshot']);
    expect(top(catalogue, 'tap')).toEqual([]);
  });

  it('ignores words that carry no meaning, in tools and in questions', () => {
    const catalogue = [
      {
        name: 'a__think',
        server: 'a',
        description: 'What you can do with this: it is for the things that you would want to do when you can',
      },
      { name: 'a__get_weather', server: 'a', description: 'Weather for a city' },
    ];
    expect(top(catalogue, 'what is the weather for the city you are in')[0]).toBe('a__get_weather');
    expect(top(catalogue, 'what is it that you can do')).toEqual([]);
  });

  it('widens a question with the words tools use for what the user said', () => {
    const catalogue = [
      { name: 'fs__create_directory', server: 'fs', description: 'Create a new directory' },
      { name: 'fs__write_file', server: 'fs', description: 'Write a file' },
    ];
    expect(top(catalogue, 'make a folder')[0]).toBe('fs__create_directory');
    expect(top(catalogue, 'save my notes')[0]).toBe('fs__write_file');
  });

  it("prefers the user's own word to a word that stands for it, and an equivalent to a loose relation", () => {
    // Two tools alike but for one word, so that only the word's weight orders them.
    const ranking = rankTools([
      { name: 'a__remove', server: 'a', description: 'remove' },
      { name: 'a__delete', server: 'a', description: 'delete' },
      { name: 'a__describe', server: 'a', description: 'describe' },
      { name: 'a__details', server: 'a', description: 'details' },
    ]);
    const equivalent = ranking.search('remove', { limit: 2 });
    expect(equivalent.map((hit) => hit.name)).toEqual(['a__remove', 'a__delete']);
    const loose = ranking.search('details', { limit: 2 });
    expect(loose.map((hit) => hit.name)).toEqual(['a__details', 'a__describe']);
    // "remove" is another word for delete; "details" only hints at describe.
    const ratio = (hits: typeof loose) => (hits[1]?.score ?? 0) / (hits[0]?.score ?? 1);
    expect(ratio(loose)).toBeLessThan(ratio(equivalent));
  });

  it('widens only with words the catalogue itself uses', () => {
    // "photo" stands for "image"; no tool says image, so it cannot match "imagemagick" by prefix.
    const catalogue = [{ name: 'a__imagemagick', server: 'a', description: 'Imagemagick wrapper' }];
    expect(top(catalogue, 'photo')).toEqual([]);
    expect(top(catalogue, 'imagemagick')).toEqual(['a__imagemagick']);
  });

  it('reads a word that is also a noun as an action only at the head of the question', () => {
    const catalogue = [
      { name: 'gh__create_pull_request', server: 'gh', description: 'Create a new pull request' },
      { name: 'gh__list_pull_requests', server: 'gh', description: 'List pull requests' },
    ];
    expect(top(catalogue, 'open a pull request')[0]).toBe('gh__create_pull_request');
    expect(top(catalogue, 'show the open pull requests')[0]).toBe('gh__list_pull_requests');
  });

  it('counts what the user asked for once, however many related words matched it', () => {
    const catalogue = [
      // Three words that all stand for "show", and nothing about channels.
      { name: 'a__get_view', server: 'a', description: 'Get, list, display and view' },
      { name: 'a__show_channels', server: 'a', description: 'Show channels' },
    ];
    expect(top(catalogue, 'show channels')[0]).toBe('a__show_channels');
    const catalogue2 = [
      { name: 'a__get_list_display', server: 'a', description: 'get list display view read' },
      { name: 'a__channel_topic', server: 'a', description: 'A channel and its topic' },
    ];
    expect(top(catalogue2, 'show the channel topic')[0]).toBe('a__channel_topic');
  });

  it('favours the tools of a server the question names', () => {
    // Names without a namespace, as a gateway configured without one lists them.
    const catalogue = [
      { name: 'create_issue', server: 'github', description: 'Create an issue' },
      { name: 'create_issue_', server: 'gitlab', description: 'Create an issue' },
    ];
    expect(top(catalogue, 'create an issue in gitlab')[0]).toBe('create_issue_');
    expect(top(catalogue, 'create an issue on github')[0]).toBe('create_issue');
  });

  it("weighs a description's first sentence above the rest of it", () => {
    const catalogue = [
      {
        name: 'a__archive',
        server: 'a',
        description: 'Store a copy of a record for later. Unlike deleting a record, this keeps it.',
      },
      { name: 'a__purge', server: 'a', description: 'Deleting a record for good. It cannot be undone.' },
    ];
    expect(top(catalogue, 'deleting a record')[0]).toBe('a__purge');
  });

  it('weighs the name above the parameters', () => {
    const catalogue = [
      {
        name: 'a__send_email',
        server: 'a',
        inputSchema: { type: 'object', properties: { attachment: { description: 'A file to attach' } } },
      },
      { name: 'a__attach_file', server: 'a' },
    ];
    expect(top(catalogue, 'attach a file')[0]).toBe('a__attach_file');
    expect(top(catalogue, 'attachment')).toContain('a__send_email');
  });
});

describe('rankTools: parameters', () => {
  it('reads the values an argument accepts as words the tool understands', () => {
    const catalogue = [
      { name: 'a__get_issue', server: 'a', description: 'Get an issue' },
      {
        name: 'a__update_issue',
        server: 'a',
        description: 'Update an issue',
        inputSchema: { type: 'object', properties: { state: { type: 'string', enum: ['open', 'closed'] } } },
      },
    ];
    expect(top(catalogue, 'closed issue')[0]).toBe('a__update_issue');
  });
});

describe('search terms', () => {
  it('splits code names into words', () => {
    expect(splitWords('github__createIssue')).toEqual(['github', 'create', 'issue']);
    expect(splitWords('API-post-search')).toEqual(['api', 'post', 'search']);
    expect(splitWords('parseHTMLDocument')).toEqual(['parse', 'html', 'document']);
  });

  it('stems without merging different words', () => {
    expect(stem('creating')).toBe(stem('create'));
    expect(stem('created')).toBe(stem('creates'));
    expect(stem('directories')).toBe(stem('directory'));
    expect(stem('branches')).toBe(stem('branch'));
    expect(stem('navigation')).toBe(stem('navigate'));
    expect(stem('approval')).toBe(stem('approve'));
    expect(stem('environments')).toBe(stem('environment'));
    expect(stem('containers')).toBe(stem('contain'));
    // Short words keep -er and -al: a "user" is not a "us", a "label" not a "lab".
    expect(stem('user')).toBe('user');
    expect(stem('label')).toBe('label');
    expect(stem('running')).toBe('run');
    expect(stem('pulled')).toBe('pull');
    expect(stem('status')).toBe('status');
    expect(stem('address')).toBe('address');
    expect(stem('reply')).toBe(stem('replies'));
    expect(stem('node')).not.toBe(stem('no'));
  });

  it('drops stop words', () => {
    expect(termsOf('show me the files in my folder')).toEqual(['show', 'fil', 'folder']);
  });
});
