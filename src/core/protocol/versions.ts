/**
 * MCP protocol revisions, newest first, as the SDK (1.32) lists them. Kept here as plain data
 * because importing them from the SDK's `types.js` loads its whole zod schema set, the largest
 * single cost of the gateway's start-up (measured). A unit test keeps this list equal to
 * the installed SDK's.
 */
export const SUPPORTED_PROTOCOL_VERSIONS: readonly string[] = [
  '2025-11-25',
  '2025-06-18',
  '2025-03-26',
  '2024-11-05',
  '2024-10-07',
];

export const LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0]!;
