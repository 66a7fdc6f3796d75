/**
 * The events the replica running a call has written on its resumable stream, kept so that a
 * host whose stream broke gets, on the stream it resumes (here or relayed through another
 * replica), exactly the events after the last one it saw: none twice, none skipped. The
 * positions go on across the call's streams, and its answer is kept too, should it come while
 * no stream is open.
 *
 * The log is bounded: it keeps the last `MAX_EVENTS` events and `MAX_BYTES` of them. A host that
 * resumes from before what is kept is told so rather than given a stream with a hole in it.
 */
export class CallLog {
  /** The position of the next event. */
  private next = 0;
  private readonly kept: { readonly position: number; readonly text: string }[] = [];
  private bytes = 0;
  /** The position of the newest event dropped over the bounds (-1: none was). */
  private dropped = -1;
  /** The stream's last event (the call's answer, framed with its id), once it came. */
  ended: string | undefined;

  /** Takes the position of a new event (a priming event is numbered but not kept). */
  position(): number {
    return this.next++;
  }

  /** Keeps the event at `position`, framed as it was written, dropping the oldest over the bounds. */
  keep(position: number, text: string): void {
    this.kept.push({ position, text });
    this.bytes += text.length;
    while (this.kept.length > MAX_EVENTS || (this.bytes > MAX_BYTES && this.kept.length > 1)) {
      const oldest = this.kept.shift()!;
      this.bytes -= oldest.text.length;
      this.dropped = oldest.position;
    }
  }

  /**
   * The events written after position `after`, framed; undefined when some of them are no
   * longer kept.
   */
  since(after: number): string[] | undefined {
    if (this.dropped > after) return undefined;
    return this.kept.filter((event) => event.position > after).map((event) => event.text);
  }
}

/** Events kept per call, at most. */
export const MAX_EVENTS = 256;
/** Characters of events kept per call, at most (the last event is kept whatever its size). */
export const MAX_BYTES = 1_048_576;
