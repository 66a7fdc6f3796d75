/** The policy engine's public surface: load files, build an engine, ask it. */
export {
  CAUTIOUS_HINTS,
  readAnnotations,
  type AnnotationReading,
  type HintOrigin,
  type HintReading,
} from './annotations.js';
export {
  createPolicyEngine,
  describeGuardrailEntry,
  type Explanation,
  type GuardrailsFound,
  type PolicyCallInput,
  type PolicyEngine,
  type PolicyToolInput,
  type TraceEntry,
} from './engine.js';
export {
  combinePolicyFiles,
  loadPolicies,
  parsePolicyText,
  POLICY_SCHEMA_URL,
  policySchema,
} from './loadPolicies.js';
export type {
  ArgumentCondition,
  ArgumentVerdict,
  Decision,
  Effect,
  GuardrailRule,
  HintName,
  PolicyFile,
  PolicyMatch,
  PolicyRule,
  PolicySet,
  PolicySource,
} from './types.js';
