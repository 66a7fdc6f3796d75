/**
 * Freezes `value` and everything reachable through its own data properties, and returns it.
 *
 * Getters are not invoked (reading them could have side effects). Typed arrays are left alone
 * because `Object.freeze` throws on them, and the contents of Maps and Sets are not frozen by
 * `Object.freeze` at all; the config contains neither.
 */
export function deepFreeze<T>(value: T): T {
  const seen = new WeakSet<object>();
  const visit = (node: unknown): void => {
    if ((typeof node !== 'object' && typeof node !== 'function') || node === null) return;
    if (seen.has(node) || ArrayBuffer.isView(node)) return;
    seen.add(node);
    // Freeze children first: an already-frozen parent must not stop us reaching them, and
    // shared (possibly pre-frozen) subtrees are still walked once.
    for (const descriptor of Object.values(Object.getOwnPropertyDescriptors(node))) {
      if ('value' in descriptor) visit(descriptor.value);
    }
    Object.freeze(node);
  };
  visit(value);
  return value;
}
