/** Edit distance (insertions, deletions, substitutions each cost 1). */
export function levenshtein(a: string, b: string): number {
  if (a === b) return 0;
  if (a.length === 0) return b.length;
  if (b.length === 0) return a.length;
  // One row of the DP table is enough: row[j] is the distance between a[0..i) and b[0..j).
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      next.push(Math.min((row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1, substitution));
    }
    row = next;
  }
  return row[b.length] ?? 0;
}

/**
 * The candidate closest to `input`, or undefined when none is close enough to be a plausible typo.
 * Case is ignored (`mcpservers` → `mcpServers`); the allowance grows with the candidate's length
 * (about one edit per three characters) so short keys like `env` and `cwd` are not confused.
 * A truncated or extended word (`warning` → `warn`) is also close, when the shared part has at
 * least three characters. Ties go to the earlier candidate, so callers list likelier keys first.
 */
export function didYouMean(input: string, candidates: Iterable<string>): string | undefined {
  const needle = input.toLowerCase();
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    if (candidate === input) continue;
    const lower = candidate.toLowerCase();
    const distance = levenshtein(needle, lower);
    const allowance = Math.max(1, Math.floor(candidate.length / 3));
    const shorter = Math.min(needle.length, lower.length);
    const prefix = shorter >= 3 && (needle.startsWith(lower) || lower.startsWith(needle));
    if ((distance <= allowance || prefix) && distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
