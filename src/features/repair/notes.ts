/**
 * The text blocks repair adds to a result. A model reads them, usually without knowing a gateway
 * exists, so each one says who is speaking, what happened, and above all whether the tool call
 * itself worked: `isError: true` set by us must not make the model retry or give up on a call
 * that did its job.
 */

/** Marks every text the gateway writes into a result, so nobody mistakes it for the tool's. */
export const NOTE_PREFIX = '[mcp-warden]';

export function invalidStructuredNote(
  message: string,
  options: { readonly markedError: boolean; readonly dataAddedAbove: boolean },
): string {
  const where = options.dataAddedAbove
    ? 'the data is in the text above, exactly as the tool returned it.'
    : "the tool's own text output above is unchanged.";
  return options.markedError
    ? `${NOTE_PREFIX} The tool's structuredContent did not match its declared outputSchema (${message}), so it was removed and this result is marked as an error. The call itself may have succeeded; ${where}`
    : `${NOTE_PREFIX} The tool's structuredContent did not match its declared outputSchema (${message}), so it was removed; ${where}`;
}

export function missingStructuredNote(options: { readonly hasOtherContent: boolean }): string {
  const where = options.hasOtherContent
    ? 'its output is in the content above.'
    : 'it returned no other content.';
  return `${NOTE_PREFIX} This result is marked as an error because the tool declares an outputSchema but returned no structuredContent object that matches it. The call itself may have succeeded; ${where}`;
}
