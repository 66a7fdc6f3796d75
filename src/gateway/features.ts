import { UI_EXTENSION } from '../core/catalog/appUi.js';
import type { ListedItem } from '../core/catalog/catalogs.js';
import type { ServerConfig, WardenConfig } from '../config/types.js';
import { DeniedError } from '../core/errors.js';
import type { LifecycleEvent } from '../core/events.js';
import type { Logger } from '../core/logger.js';
import type { Principal } from '../core/principal.js';
import { orderStages, type StageName } from '../core/pipeline/order.js';
import { compose } from '../core/pipeline/compose.js';
import type { Next, Stage } from '../core/pipeline/types.js';
import { foldVisibility, type Feature } from '../core/routing/feature.js';
import { refusedByConfig } from '../core/routing/clientRequests.js';
import { withAppVisibility } from '../core/routing/toolResolution.js';
import { createAudit } from '../features/audit/feature.js';
import type { AuditStageOptions } from '../features/audit/stage.js';
import { createConfirmation } from '../features/confirmation/feature.js';
import { createGuardrails } from '../features/guardrails/feature.js';
import type { ConfirmationOptions } from '../features/confirmation/stage.js';
import { createFlowControl } from '../features/flowControl/feature.js';
import { FlowSessions } from '../features/flowControl/sessions.js';
import { sessionKey } from '../features/flowControl/stage.js';
import { createLimits } from '../features/limits/feature.js';
import { createPrincipalLimits } from '../features/limits/principalFeature.js';
import { createRateLimits } from '../features/limits/rateFeature.js';
import { createPins } from '../features/pins/feature.js';
import type { PinSet } from '../features/pins/pinFile.js';
import type { PinGuard } from '../features/pins/pinGuard.js';
import { createPinStage } from '../features/pins/stage.js';
import { describeGuardrailEntry } from '../features/policy/engine.js';
import { createPolicy } from '../features/policy/feature.js';
import type { PolicySet } from '../features/policy/types.js';
import { createReplicaLease } from '../features/replicaLease/feature.js';
import { createRepair } from '../features/repair/feature.js';
import { createOutputValidator } from '../features/repair/outputSchemaValidator.js';
import { createTelemetry } from '../features/telemetry/feature.js';
import type { TelemetryStageOptions } from '../features/telemetry/stage.js';
import { createTimeout } from '../features/timeout/feature.js';
import { createToolSearch } from '../features/toolSearch/feature.js';
import { createValidate } from '../features/validate/feature.js';
import { createInputValidator } from '../features/validate/inputValidator.js';
import type { SharedStore } from '../lib/store/sharedStore.js';
import { createSchemaWarmup } from './schemaWarmup.js';

/** What the features need from the gateway around them. */
export interface FeatureDependencies {
  readonly config: WardenConfig;
  readonly logger: Logger;
  /** The policies loaded at start. */
  readonly policies: PolicySet;
  /** Asks the host through elicitation; undefined when it cannot. */
  readonly askHost: ConfirmationOptions['askHost'];
  readonly redact: (value: unknown) => unknown;
  /**
   * Writes a record to the audit trail, when there is one (never throws); for `principal`, or the
   * gateway's own when absent.
   */
  readonly record: (event: LifecycleEventWithoutSession, principal?: Principal) => void;
  /** Present when the config has `audit:`. */
  readonly audit?: Omit<AuditStageOptions, 'config' | 'logger'>;
  /** The pins file as read at start, when the config has `pins:`. */
  readonly pins?: { readonly pins: PinSet; readonly text: string | undefined };
  /** Present when the config has `telemetry:`. */
  readonly telemetry?: Omit<TelemetryStageOptions, 'redact'>;
  /**
   * The servers in force by name, kept current by the gateway across edits of the config;
   * absent: the config's, as they are at start.
   */
  readonly serversByName?: ReadonlyMap<string, ServerConfig>;
  /** The store replicas share, when the config has `store:`. */
  readonly store?: SharedStore;
  /**
   * When the latest request of a host to an upstream arrived (`performance.now()`, 0 before
   * any); absent: never (nothing waits on it).
   */
  readonly lastHostRequest?: () => number;
}

export type LifecycleEventWithoutSession = LifecycleEvent extends infer E
  ? E extends { session: string }
    ? Omit<E, 'session'>
    : never
  : never;

/**
 * Every feature this config turns on, each made by its own factory. The one place that knows
 * them all: the pipeline's stages, the host's tool list and the files watched are folded from
 * what these return.
 */
export function buildFeatures(deps: FeatureDependencies): {
  readonly features: readonly Feature[];
  readonly policy: ReturnType<typeof createPolicy>;
  /** The features of `SETTINGS_STAGES` made for other settings (a managed edit's). */
  readonly settingsFeatures: (config: WardenConfig) => Feature[];
} {
  const { config, logger } = deps;
  const servers = deps.serversByName ?? new Map(config.servers.map((s) => [s.name, s]));
  const sessions = new FlowSessions();
  const policy = createPolicy(config, {
    policies: deps.policies,
    logger,
    record: deps.record,
    refusedByConfig: (message) => refusedByConfig(message, servers),
    sessionLabels: (message) => sessions.seen(sessionKey(message)),
  });
  const { pins: pinsConfig } = config;
  // One of each for the life of the gateway: the stages made for each settings in force use
  // them, so a schema compiled once (ahead of its first call, see schemaWarmup.ts) stays so.
  const validators = { input: createInputValidator(), output: createOutputValidator() };
  const audit =
    deps.audit && config.audit ? createAudit({ audit: config.audit }, { ...deps.audit, logger }) : undefined;
  const features: Feature[] = [
    ...(deps.telemetry ? createTelemetry({ ...deps.telemetry, redact: deps.redact }) : []),
    ...(audit ? [audit] : []),
    ...(pinsConfig
      ? [
          createPins(
            { ...config, pins: pinsConfig },
            { logger, record: deps.record, ...(deps.pins && { initial: deps.pins }) },
          ),
        ]
      : []),
    ...settingsFeatures(config),
    createSchemaWarmup(config, {
      ...validators,
      servers,
      logger,
      lastHostRequest: deps.lastHostRequest ?? (() => 0),
    }),
    policy,
    createLimits(config),
    createPrincipalLimits(config),
    createToolSearch(config),
    createRateLimits(config, { record: deps.record, ...(deps.store && { store: deps.store }) }),
    createReplicaLease(config, {
      servers,
      logger,
      ...(deps.store && { store: deps.store }),
      ...(audit?.stage && { audited: audit.stage.run }),
    }),
  ];
  return { features, policy, settingsFeatures };

  function settingsFeatures(settings: WardenConfig): Feature[] {
    return [
      createValidate(settings, { logger, validator: validators.input }),
      createConfirmation(settings, { askHost: deps.askHost, redact: deps.redact, logger }),
      createTimeout(settings),
      createRepair(settings, { logger, validator: validators.output }),
      // What each session has seen outlives the settings: only `flow.trifecta` and the servers'
      // labels are read from them.
      createFlowControl(settings, { sessions, policyLabels: (message) => policy.labelsOf(message).labels }),
      ...createGuardrails(settings, {
        logger,
        record: deps.record,
        policyLevels: (message) =>
          policy.guardrailsOf(message).map((found) => ({
            settings: found.rule.settings,
            from: describeGuardrailEntry(found),
          })),
      }),
    ];
  }
}

/**
 * Whether a host sees an item in its lists: every feature lets it (policy, pins), and an
 * app-only tool only when the host runs Apps (see toolResolution.ts). The one rule the gateway's
 * lists and `mcp-warden tools` both apply, so the two cannot disagree.
 */
export function visible(
  features: readonly Feature[],
  host: () => { readonly declaresExtension: (name: string) => boolean } | undefined,
): (item: ListedItem) => boolean {
  return withAppVisibility(foldVisibility(features), () => host()?.declaresExtension(UI_EXTENSION) ?? false);
}

/**
 * The stages that are nothing but settings (no state a call after another relies on): made
 * afresh from the config a managed edit gives, so a lock on what they read applies from the
 * next call, with the calls in flight finishing under the stage they started in.
 */
const SETTINGS_STAGES: readonly StageName[] = [
  'validate',
  'flow',
  'confirmation',
  'timeout',
  'resultRepair',
  'guardrails',
];

/**
 * `features` with each settings stage replaced by the one `current` holds under its name, and
 * left out when it holds none (as a config without that stage would leave it out).
 */
function withSettings(features: readonly Feature[], current: ReadonlyMap<StageName, Stage>): Feature[] {
  return [
    ...features.filter((f) => f.stage === undefined || !SETTINGS_STAGES.includes(f.stage.name)),
    ...[...current].map(([name, run]): Feature => ({ stage: { name, run } })),
  ];
}

/** The settings stages among `features`, by name. */
function stagesByName(features: readonly Feature[]): Map<StageName, Stage> {
  return new Map(
    features.flatMap((f) =>
      f.stage && SETTINGS_STAGES.includes(f.stage.name) ? [[f.stage.name, f.stage.run] as const] : [],
    ),
  );
}

/** The pipeline's stages, in the order STAGE_ORDER fixes (see core/pipeline/order.ts). */
export function pipelineStages(features: readonly Feature[]): Stage[] {
  const stages: Partial<Record<StageName, Stage>> = {};
  for (const feature of features) if (feature.stage) stages[feature.stage.name] = feature.stage.run;
  const observe = stageObserver(features);
  if (observe !== undefined)
    for (const [name, run] of Object.entries(stages) as [StageName, Stage][])
      stages[name] = (message, next) => {
        observe(name, message);
        return run(message, next);
      };
  return orderStages(stages);
}

/** Every feature's stage observer as one; undefined (and no stage wrapped) when none has one. */
export function stageObserver(features: readonly Feature[]): Feature['observeStage'] {
  const observers = features.flatMap((f) => (f.observeStage ? [f.observeStage] : []));
  if (observers.length <= 1) return observers[0];
  return (stage, message) => observers.forEach((observe) => observe(stage, message));
}

/** The pipeline of a gateway, and how a managed edit changes the settings its stages read. */
export interface ManagedPipeline {
  /**
   * `terminal` wrapped in the stages in force. Composed again, at the next call, after other
   * settings came into force; the calls in flight finish in the stages they started in.
   */
  compose(terminal: Next): Next;
  /**
   * Puts other settings in force from the next call on: the settings stages made for them and,
   * when they require an audit trail the gateway did not open, the refusal of every call.
   */
  applySettings(settings: WardenConfig): void;
}

/**
 * The pipeline for `features`. With managed settings, or with the config reloaded while
 * serving (`gateway.reload`), an edit may change what the settings stages read: the stages are
 * then composed again from the ones made for the settings in force. A stage that has nothing to
 * do for the settings in force is left out when the pipeline is composed, not passed by each
 * call: a call pays only for the stages that can act on it. Without managed settings or reloads,
 * nothing changes while serving.
 */
export function managedPipeline(
  features: readonly Feature[],
  options: {
    readonly config: WardenConfig;
    readonly audited: boolean;
    readonly settingsFeatures: (config: WardenConfig) => Feature[];
  },
): ManagedPipeline {
  const { config } = options;
  const swappable = config.managed !== undefined || config.gateway.reload;
  let settingsStages = stagesByName(features);
  /**
   * Set when a managed edit requires an audit trail and none was opened at start: a trail cannot
   * be opened under a running gateway, and serving unaudited calls would be the weaker state the
   * organisation forbade, so every call is refused (saying why) until a restart opens it.
   */
  let unaudited: string | undefined;
  const stagesInForce = (): Stage[] => {
    const refusal = unaudited;
    const refuseUnaudited: Feature[] =
      refusal === undefined || config.managed === undefined
        ? []
        : [{ stage: { name: 'audit', run: () => Promise.reject(new DeniedError(refusal, null)) } }];
    return pipelineStages(
      swappable ? [...withSettings(features, settingsStages), ...refuseUnaudited] : features,
    );
  };
  let stages = stagesInForce();
  /** Counts the settings put in force: a connection's chain made before the last is made again. */
  let generation = 0;
  return {
    compose(terminal) {
      let made = generation;
      let chain = compose(stages, terminal);
      if (!swappable) return chain;
      return (message) => {
        if (made !== generation) {
          made = generation;
          chain = compose(stages, terminal);
        }
        return chain(message);
      };
    },
    applySettings(settings) {
      settingsStages = stagesByName(options.settingsFeatures(settings));
      unaudited =
        !options.audited && settings.audit !== undefined
          ? `Calls are refused: the organisation's managed settings (${config.managed?.file ?? 'managed.yaml'}) now require an audit trail, which mcp-warden opens only when it starts. Restart mcp-warden (or the host) to go on.`
          : undefined;
      stages = stagesInForce();
      generation++;
    },
  };
}

/**
 * The pipeline's stages for this config: audit only when `audit:` is set, pins only with
 * `pins:`. Kept for tests that look at the stages alone.
 */
export function buildPipelineStages(
  deps: Omit<FeatureDependencies, 'record' | 'policies' | 'pins'> & {
    readonly engine?: unknown;
    readonly pins?: PinGuard;
  },
): Stage[] {
  const { features } = buildFeatures({
    ...deps,
    config: { ...deps.config, pins: undefined },
    policies: { files: [] },
    record: () => {},
    pins: undefined,
  });
  // A given guard stands in for the one the pins feature would read from the pins file.
  const guard = deps.pins;
  const withPins =
    guard === undefined
      ? features
      : [
          ...features,
          { stage: { name: 'pins' as const, run: createPinStage({ refusal: guard.refusal.bind(guard) }) } },
        ];
  return pipelineStages(withPins);
}
