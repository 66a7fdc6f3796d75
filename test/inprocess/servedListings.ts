/**
 * The in-process twin of `keepListings` (test/integration/harness.ts): serves `configFile` in
 * this process once, until every server has connected and been listed, so that the next gateway
 * on it keeps their listings (its initialize answer, or server/discover, then carries what the
 * servers declared, however slow their start).
 */
import type { ConnectOptions } from '../integration/harness.js';
import { connectServed } from './served.js';

export async function keepServedListings(configFile: string, options: ConnectOptions = {}): Promise<void> {
  const once = await connectServed(configFile, options);
  await once.client.listTools();
  await once.close();
}
