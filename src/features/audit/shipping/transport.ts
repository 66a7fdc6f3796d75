import type { ShippedRecord } from './format.js';

/** A network sink's connection: takes a batch of records, in order, or rejects. */
export interface SinkTransport {
  send(records: readonly ShippedRecord[]): Promise<void>;
  close(): void;
}
