import type { Resource, ResourceTemplate } from '@modelcontextprotocol/sdk/types.js';
import { exposedUiUri, isUiUri, originalUiUri } from './appUi.js';

/** What the resource catalog needs to know of one upstream. */
export interface ResourceSource {
  readonly server: string;
  /** Whether the server declared the resources capability (it may still list none). */
  readonly offersResources: boolean;
  readonly resources: readonly Resource[];
  readonly templates: readonly ResourceTemplate[];
}

/** Which resources and templates the host's lists show; absent: all. */
export interface ResourceListing {
  readonly resource?: (server: string, resource: Resource) => boolean;
  readonly template?: (server: string, template: ResourceTemplate) => boolean;
}

/**
 * An RFC 6570 template as an anchored pattern. Each expression matches any run of characters:
 * precise enough to tell servers apart by scheme and path shape, which is all routing needs.
 */
function templatePattern(template: string): RegExp {
  const parts = template.split(/\{[^}]*\}/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  return new RegExp(`^${parts.join('.*?')}$`);
}

/**
 * Resources are not namespaced: a URI means the same thing whoever serves it, and hosts show
 * them as they are. So ownership is by URI: exact resources first, then templates, in config
 * order; two servers listing one URI is reported and the first keeps it. The exception is MCP
 * Apps' `ui://` URIs and URI templates, which servers choose without any care for uniqueness (see
 * appUi.ts): each is served under its server's name.
 */
export class ResourceCatalog {
  private owners = new Map<string, string>();
  private templates: { pattern: RegExp; server: string }[] = [];
  private onlyServer: string | undefined;
  private servers: ReadonlySet<string> = new Set();
  private resourcesJson = '{"resources":[]}';
  private templatesJson = '{"resourceTemplates":[]}';
  /** What the lists show, each with its server, for a connection that sees only part of it. */
  private shown: {
    readonly resources: readonly { readonly server: string; readonly resource: Resource }[];
    readonly templates: readonly { readonly server: string; readonly template: ResourceTemplate }[];
  } = { resources: [], templates: [] };
  private readonly reported = new Set<string>();

  constructor(private readonly onWarning: (message: string) => void) {}

  /**
   * Rebuilds from `sources` (config order); true when what the host sees changed. What `listed`
   * rejects stays routable but is left out of the lists: a read of it gets the policy's answer.
   */
  rebuild(sources: readonly ResourceSource[], listed?: ResourceListing): boolean {
    const owners = new Map<string, string>();
    const resources: Resource[] = [];
    for (const source of sources) {
      for (const listedResource of source.resources) {
        const resource = isUiUri(listedResource.uri)
          ? { ...listedResource, uri: exposedUiUri(source.server, listedResource.uri) }
          : listedResource;
        const first = owners.get(resource.uri);
        if (first !== undefined) {
          const warning = `resource ${JSON.stringify(resource.uri)} is listed by servers "${first}" and "${source.server}"; "${first}" (listed first in the config) serves it`;
          if (!this.reported.has(warning)) this.onWarning(warning);
          this.reported.add(warning);
          continue;
        }
        owners.set(resource.uri, source.server);
        resources.push(resource);
      }
    }
    // An App's template is served under its server's name like its resources, so each URI it
    // expands to reads back to that server (see `route`).
    const templates = sources.flatMap((s) =>
      s.templates.map((t) => ({
        template: isUiUri(t.uriTemplate) ? { ...t, uriTemplate: exposedUiUri(s.server, t.uriTemplate) } : t,
        server: s.server,
      })),
    );
    const offering = sources.filter((s) => s.offersResources);
    const shownResources =
      listed?.resource === undefined
        ? resources
        : resources.filter((r) => listed.resource!(owners.get(r.uri)!, r));
    const shownTemplates =
      listed?.template === undefined
        ? templates
        : templates.filter((t) => listed.template!(t.server, t.template));
    const resourcesJson = JSON.stringify({ resources: shownResources });
    const templatesJson = JSON.stringify({ resourceTemplates: shownTemplates.map((t) => t.template) });
    const changed = resourcesJson !== this.resourcesJson || templatesJson !== this.templatesJson;
    this.owners = owners;
    this.templates = templates.map((t) => ({
      pattern: templatePattern(t.template.uriTemplate),
      server: t.server,
    }));
    this.onlyServer = offering.length === 1 ? offering[0]!.server : undefined;
    this.servers = new Set(sources.map((s) => s.server));
    this.resourcesJson = resourcesJson;
    this.templatesJson = templatesJson;
    this.shown = {
      resources: shownResources.map((resource) => ({ server: owners.get(resource.uri)!, resource })),
      templates: shownTemplates,
    };
    return changed;
  }

  /**
   * The server that serves `uri`: the one that listed it, else the first whose template
   * matches, else the only server offering resources at all (servers may serve URIs they do
   * not list). Undefined when nothing claims it.
   */
  ownerOf(uri: string): string | undefined {
    return this.owners.get(uri) ?? this.templates.find((t) => t.pattern.test(uri))?.server ?? this.onlyServer;
  }

  /**
   * Where a request for `uri` goes: the server, and the URI that server knows (its own `ui://`
   * URI for a namespaced one, else `uri` itself). Undefined when nothing claims it.
   */
  route(uri: string): { readonly server: string; readonly uri: string } | undefined {
    const app = originalUiUri(uri, (name) => this.servers.has(name));
    if (app !== undefined) return app;
    const server = this.ownerOf(uri);
    return server === undefined ? undefined : { server, uri };
  }

  listResultJson(): string {
    return this.resourcesJson;
  }

  templatesResultJson(): string {
    return this.templatesJson;
  }

  /** `listResultJson` of only the resources `keep` lets through (by server and exposed URI). */
  listResultJsonOf(keep: (server: string, uri: string) => boolean): string {
    const resources = this.shown.resources.filter((r) => keep(r.server, r.resource.uri));
    return JSON.stringify({ resources: resources.map((r) => r.resource) });
  }

  /** `templatesResultJson` of only the templates `keep` lets through (by server and exposed template). */
  templatesResultJsonOf(keep: (server: string, uriTemplate: string) => boolean): string {
    const templates = this.shown.templates.filter((t) => keep(t.server, t.template.uriTemplate));
    return JSON.stringify({ resourceTemplates: templates.map((t) => t.template) });
  }
}
