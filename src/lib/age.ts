/**
 * How long ago something happened, in the one largest whole unit a person reads at a glance:
 * `just now` under a second, then `42 s`, `5 min`, `3 h`, `2 d` (rounded down). A time in the
 * future (a clock set back) reads as `just now`.
 */
export function describeAge(ms: number): string {
  if (!(ms >= 1000)) return 'just now';
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h`;
  return `${Math.floor(hours / 24)} d`;
}

/** `describeAge` of an ISO 8601 time, followed by "ago" (`5 min ago`); `at an unknown time` for junk. */
export function agoOf(iso: string, now = Date.now()): string {
  const at = Date.parse(iso);
  if (Number.isNaN(at)) return 'at an unknown time';
  const age = describeAge(now - at);
  return age === 'just now' ? age : `${age} ago`;
}
