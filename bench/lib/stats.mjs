// Small statistics the benchmarks share: each reports medians of per-block ratios with their
// quartiles, and takes turns in an order rotated per block.

/** The median of `values` (NaN for none). */
export function median(values) {
  const v = [...values].sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** The `q` quantile of `values`, interpolated between the two nearest. */
export function quantile(values, q) {
  const v = [...values].sort((a, b) => a - b);
  const pos = (v.length - 1) * q;
  const lo = Math.floor(pos);
  return v[lo] + (v[Math.min(lo + 1, v.length - 1)] - v[lo]) * (pos - lo);
}

/** `list` started `by` places in, wrapping round. */
export function rotate(list, by) {
  const k = by % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}
