import { matchesGlob } from '../../lib/glob.js';
import type { Principal } from '../../core/principal.js';

/**
 * A rule's `principal` condition: who the call is made for (see core/principal.ts). `subject`
 * globs match the principal's subject (the token's `sub`, or the OS user); each entry of `claims`
 * names a claim the principal carries (`auth.claims` in the config) and globs its value must
 * match; a claim holding a list (such as `groups`) matches when any of its entries does. Every
 * condition written must hold.
 */
export interface PrincipalConditionSpec {
  readonly subject: readonly string[] | null;
  readonly claims: Readonly<Record<string, readonly string[]>> | null;
}

/** Whether a principal satisfies the condition, and why (for `policy explain`). */
export interface PrincipalVerdict {
  readonly kind: 'match' | 'mismatch';
  readonly why: string;
}

export interface PrincipalCondition {
  readonly spec: PrincipalConditionSpec;
  /** Never throws; a request with no principal known does not match. */
  readonly test: (principal: Principal | undefined) => PrincipalVerdict;
}

/** Compiles a `principal` condition; the globs were checked by the loader. */
export function compilePrincipalCondition(spec: PrincipalConditionSpec): PrincipalCondition {
  const matcher = (globs: readonly string[]) => (value: string) =>
    globs.some((glob) => matchesGlob(glob, value));
  const subject = spec.subject === null ? null : matcher(spec.subject);
  const claims = Object.entries(spec.claims ?? {}).map(([name, globs]) => [name, matcher(globs)] as const);
  return {
    spec,
    test(principal) {
      if (principal === undefined)
        return { kind: 'mismatch', why: 'the request has no principal (nobody is known to have made it)' };
      if (subject !== null && !subject(principal.subject))
        return {
          kind: 'mismatch',
          why: `principal "${principal.subject}" does not match ${list(spec.subject!)}`,
        };
      for (const [name, matches] of claims) {
        const value = principal.claims?.[name];
        const values = Array.isArray(value) ? value : value === undefined ? [] : [value];
        if (!values.some((v) => (typeof v === 'string' || typeof v === 'number') && matches(String(v))))
          return {
            kind: 'mismatch',
            why:
              value === undefined
                ? `principal "${principal.subject}" has no ${name} claim (is it in auth.claims?)`
                : `principal "${principal.subject}"'s ${name} ${JSON.stringify(value)} does not match ${list(spec.claims![name]!)}`,
          };
      }
      return { kind: 'match', why: `principal "${principal.subject}" matches` };
    },
  };
}

function list(globs: readonly string[]): string {
  return globs.map((g) => JSON.stringify(g)).join(' or ');
}
