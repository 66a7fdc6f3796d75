import { CATALOG_DEFAULTS } from '../../config/catalog.js';
import type { WardenConfig } from '../../config/types.js';
import type { Feature } from '../../core/routing/feature.js';
import { ProfileScopes } from './profileScope.js';
import { Snapshots } from './snapshot.js';
import { CatalogView } from './view.js';

/**
 * Large catalogues: what each host connection sees of the merged tool list (`catalog:` and
 * `profiles:`). In search mode the host gets a search tool and a call tool in place of every
 * tool; the call tool hands the router a call of the real tool by its own name, so the pipeline
 * (pins, validation, policy, confirmation, audit) judges it as it would a direct call.
 */
export function createToolSearch(config: Pick<WardenConfig, 'catalog' | 'profiles'>): Feature {
  const settings = {
    catalog: config.catalog ?? CATALOG_DEFAULTS,
    profiles: config.profiles ?? [],
    snapshots: new Snapshots(),
    scopes: new ProfileScopes(),
  };
  return { toolView: (context) => new CatalogView(settings, context) };
}
