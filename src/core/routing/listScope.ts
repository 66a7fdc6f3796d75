import type { Prompt } from '@modelcontextprotocol/sdk/types.js';
import type { NamedCatalog } from '../catalog/namedCatalog.js';
import type { ResourceCatalog } from '../catalog/resourceCatalog.js';
import type { ListScope } from './toolView.js';

/**
 * The prompts, resources and resource templates lists one connection gets: the catalogues' own
 * text while the connection may see everything, else only what its scope lets through. The
 * prompts list is filtered again only when the catalogue's list or the scope changed.
 */
export class ScopedLists {
  private prompts: { source: string; scope: ListScope; text: string } | undefined;

  constructor(
    private readonly catalogs: {
      readonly prompts: NamedCatalog<Prompt>;
      readonly resources: ResourceCatalog;
    },
    /** The connection's scope now; undefined while it may see everything. */
    readonly scope: () => ListScope | undefined,
  ) {}

  promptsJson(): string {
    const source = this.catalogs.prompts.listResultJson();
    const scope = this.scope();
    if (scope === undefined) return source;
    if (this.prompts?.source !== source || this.prompts.scope !== scope) {
      const listed = (JSON.parse(source) as { prompts?: Prompt[] }).prompts ?? [];
      const kept = listed.filter((prompt) => this.showsPrompt(scope, prompt.name));
      this.prompts = { source, scope, text: JSON.stringify({ prompts: kept }) };
    }
    return this.prompts.text;
  }

  resourcesJson(): string {
    const scope = this.scope();
    const { resources } = this.catalogs;
    return scope === undefined
      ? resources.listResultJson()
      : resources.listResultJsonOf((server, uri) => scope.resource(server, uri));
  }

  templatesJson(): string {
    const scope = this.scope();
    const { resources } = this.catalogs;
    return scope === undefined
      ? resources.templatesResultJson()
      : resources.templatesResultJsonOf((server, uriTemplate) => scope.template(server, uriTemplate));
  }

  /** Whether this connection may see (and use) `server`'s prompt that the host knows as `name`. */
  showsPrompt(scope: ListScope | undefined, name: string, server?: string): boolean {
    if (scope === undefined) return true;
    const owner = server ?? this.catalogs.prompts.resolve(name)?.server;
    return owner !== undefined && scope.prompt(owner, name);
  }

  /** Whether this connection may see (and use) `server`'s resource that the host knows as `uri`. */
  showsResource(server: string, uri: string): boolean {
    return this.scope()?.resource(server, uri) ?? true;
  }
}
