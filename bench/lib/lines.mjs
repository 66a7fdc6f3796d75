// Newline-delimited framing shared by the bench's fixture server and client. Both ends of the
// bench must be cheaper than the thing measured, so this does the least work that is correct:
// one indexOf per line, and partial lines are joined only when a line ends (a 2 MiB tools/list
// arrives in many chunks; joining on every chunk would be quadratic).

/**
 * Returns a `data` handler for a stream with `setEncoding('utf8')` (the decoder keeps
 * multi-byte characters split across chunks intact) that calls `onLine` once per line,
 * without the newline.
 */
export function lineSplitter(onLine) {
  const parts = [];
  return function onData(chunk) {
    let nl = chunk.indexOf('\n');
    if (nl === -1) {
      parts.push(chunk);
      return;
    }
    if (parts.length > 0) {
      parts.push(chunk.slice(0, nl));
      const line = parts.join('');
      parts.length = 0;
      onLine(line);
    } else {
      onLine(chunk.slice(0, nl));
    }
    let start = nl + 1;
    while ((nl = chunk.indexOf('\n', start)) !== -1) {
      onLine(chunk.slice(start, nl));
      start = nl + 1;
    }
    if (start < chunk.length) parts.push(chunk.slice(start));
  };
}
