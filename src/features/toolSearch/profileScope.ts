import type { ProfileConfig } from '../../config/types.js';
import type { ListScope } from '../../core/routing/toolView.js';
import { matchesGlob } from '../../lib/glob.js';

/** Whether `name` is one of `globs`; an empty list leaves everything in. */
const within = (globs: readonly string[], name: string): boolean =>
  globs.length === 0 || globs.some((glob) => matchesGlob(glob, name));

/** Whether `profile` lets its hosts see what `server` serves. */
export function profileHasServer(profile: ProfileConfig, server: string): boolean {
  return within(profile.servers, server);
}

/**
 * The prompts and resources each profile leaves visible: those of its `servers`, further cut by
 * its `prompts` (exposed names) and `resources` (URIs, a template by its uriTemplate) globs. One
 * scope per profile, made once, so that what is filtered with it can be kept between requests.
 */
export class ProfileScopes {
  private readonly made = new Map<string, ListScope | undefined>();

  /** `profile`'s scope; undefined when it leaves every prompt and resource visible. */
  of(profile: ProfileConfig): ListScope | undefined {
    if (this.made.has(profile.name)) return this.made.get(profile.name);
    const everything =
      profile.servers.length === 0 && profile.prompts.length === 0 && profile.resources.length === 0;
    const scope: ListScope | undefined = everything
      ? undefined
      : {
          prompt: (server, name) => profileHasServer(profile, server) && within(profile.prompts, name),
          resource: (server, uri) => profileHasServer(profile, server) && within(profile.resources, uri),
          template: (server, uriTemplate) =>
            profileHasServer(profile, server) && within(profile.resources, uriTemplate),
        };
    this.made.set(profile.name, scope);
    return scope;
  }
}
