/**
 * The gateway's entry point, where the CLI loads it from; its parts are in gateway/: the
 * features and their pipeline, the upstream connections, the hooks their events need, and the
 * host connections.
 */
export * from './gateway/gateway.js';
export {
  buildFeatures,
  buildPipelineStages,
  pipelineStages,
  type FeatureDependencies,
} from './gateway/features.js';
