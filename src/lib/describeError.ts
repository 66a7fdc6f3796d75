/** An error's message followed by its causes' (fetch hides the useful part, e.g. ECONNREFUSED, in `cause`). */
export function describeError(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 5; depth++) {
    const message = current instanceof Error ? current.message : String(current);
    if (!parts.some((p) => p.includes(message))) parts.push(message);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(': ');
}
