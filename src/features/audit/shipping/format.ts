/*
 * What a sink sends for one record line: the fields a SIEM indexes (syslog structured data, OTLP
 * attributes), a severity, and the payload: the line itself (`warden`, so the hash chain and the
 * checkpoints can be checked from the SIEM's copy) or an OCSF API Activity event (`ocsf`) that
 * carries the line in `raw_data`.
 */

/** A record line from the trail, parsed. */
export interface ShippedRecord {
  readonly line: string;
  readonly fields: Readonly<Record<string, unknown>>;
}

export function parseRecord(line: string): ShippedRecord {
  let fields: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(line);
    fields = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
  } catch {
    fields = {};
  }
  return { line, fields };
}

/** The fields every sink carries beside the payload, when the record has them. */
export function keyFields(record: ShippedRecord): Record<string, string> {
  const f = record.fields;
  const out: Record<string, string> = {};
  const put = (name: string, value: unknown) => {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      out[name] = String(value);
  };
  put('event', f['type']);
  put('seq', f['seq']);
  put('session', f['session']);
  put('host', f['host']);
  put('server', f['server']);
  put('tool', f['tool'] ?? f['method']);
  const decision = f['decision'] as { effect?: unknown; rule?: unknown } | undefined;
  put('decision', decision?.effect);
  put('rule', decision?.rule);
  put('outcome', f['outcome']);
  put('writer', f['writer']);
  put('hash', f['hash']);
  return out;
}

/** How bad a record is, as syslog and OTLP both grade it. */
export type Severity = 'error' | 'warning' | 'notice' | 'info';

export function severityOf(record: ShippedRecord): Severity {
  const { type, outcome, decision } = record.fields as {
    type?: unknown;
    outcome?: unknown;
    decision?: { effect?: unknown };
  };
  if (
    type === 'audit_gap' ||
    type === 'upstream_failed' ||
    type === 'upstream_sign_in_failed' ||
    type === 'config_reject' ||
    type === 'policy_reject' ||
    (type === 'config_reload' && record.fields['applied'] === false)
  )
    return 'error';
  if (decision?.effect === 'deny' || (typeof outcome === 'string' && outcome !== 'ok')) return 'warning';
  if (type === 'checkpoint' || type === 'tool_changed') return 'notice';
  return 'info';
}

/** The record as an OCSF 1.x API Activity event (class 6003). */
export function ocsfEvent(
  record: ShippedRecord,
  product: { readonly version: string },
): Record<string, unknown> {
  const f = record.fields;
  const type = typeof f['type'] === 'string' ? f['type'] : 'unknown';
  const decision = f['decision'] as { effect?: unknown; rule?: unknown } | undefined;
  const outcome = f['outcome'];
  const failed = decision?.effect === 'deny' || (typeof outcome === 'string' && outcome !== 'ok');
  const severity = severityOf(record);
  const operation = type === 'call' ? 'tools/call' : typeof f['method'] === 'string' ? f['method'] : type;
  const time = typeof f['ts'] === 'string' ? Date.parse(f['ts']) : Date.now();
  const client = f['client'] as { name?: unknown; version?: unknown } | undefined;
  return {
    class_uid: 6003,
    class_name: 'API Activity',
    category_uid: 6,
    category_name: 'Application Activity',
    // 99: Other. A tool call is neither a create, read, update nor delete as OCSF means them.
    activity_id: 99,
    activity_name: type,
    type_uid: 600399,
    time,
    severity_id: severity === 'error' ? 4 : severity === 'warning' ? 3 : 1,
    severity: severity === 'error' ? 'High' : severity === 'warning' ? 'Medium' : 'Informational',
    status_id: outcome === undefined ? 0 : failed ? 2 : 1,
    status: typeof outcome === 'string' ? outcome : undefined,
    ...(decision?.effect !== undefined && {
      disposition_id: decision.effect === 'deny' ? 2 : 1,
      disposition: decision.effect === 'deny' ? 'Blocked' : 'Allowed',
    }),
    api: {
      operation,
      ...(typeof f['server'] === 'string' && { service: { name: f['server'] } }),
      ...(typeof f['call'] === 'number' && { request: { uid: `${String(f['session'])}/${f['call']}` } }),
    },
    actor: {
      ...(typeof client?.name === 'string' && { app_name: client.name }),
      ...(typeof f['session'] === 'string' && { session: { uid: f['session'] } }),
    },
    ...(typeof f['host'] === 'string' && { src_endpoint: { hostname: f['host'] } }),
    ...(typeof f['tool'] === 'string' && { resources: [{ name: f['tool'], type: 'MCP tool' }] }),
    metadata: {
      version: '1.3.0',
      product: { name: 'mcp-warden', vendor_name: 'mcp-warden', version: product.version },
      log_name: 'audit',
      ...(typeof f['hash'] === 'string' && { uid: f['hash'] }),
      ...(typeof f['seq'] === 'number' && { sequence: f['seq'] }),
    },
    raw_data: record.line,
  };
}

/** The payload text a sink sends for the record in the configured shape. */
export function payloadOf(
  record: ShippedRecord,
  format: 'warden' | 'ocsf',
  product: { readonly version: string },
): string {
  return format === 'warden' ? record.line : JSON.stringify(ocsfEvent(record, product));
}

const SYSLOG_SEVERITY: Record<Severity, number> = { error: 3, warning: 4, notice: 5, info: 6 };

/** The SD-ID of our structured data: 32473 is the enterprise number RFC 5612 reserves for examples. */
export const SD_ID = 'mcpWarden@32473';

/** RFC 5424 PARAM-VALUE escaping: `"`, `\` and `]` take a backslash. */
function sdValue(value: string): string {
  return value.replace(/["\\\]]/g, (c) => `\\${c}`);
}

/** An RFC 5424 header field: printable US-ASCII without spaces, at most `max`, or `-`. */
function headerField(value: string | undefined, max: number): string {
  const cleaned = (value ?? '').replace(/[^!-~]/g, '').slice(0, max);
  return cleaned === '' ? '-' : cleaned;
}

/**
 * One RFC 5424 message with RFC 6587 octet-counting framing (`LEN SP MSG`): the key fields in
 * structured data, the payload as MSG.
 */
export function syslogFrame(
  record: ShippedRecord,
  payload: string,
  options: { readonly facility: number; readonly appName: string },
): string {
  const fields = keyFields(record);
  const pri = options.facility * 8 + SYSLOG_SEVERITY[severityOf(record)];
  const ts = typeof record.fields['ts'] === 'string' ? record.fields['ts'] : new Date().toISOString();
  const params = Object.entries(fields)
    .map(([name, value]) => `${name}="${sdValue(value)}"`)
    .join(' ');
  const sd = params === '' ? '-' : `[${SD_ID} ${params}]`;
  const message =
    `<${pri}>1 ${headerField(ts, 64)} ${headerField(fields['host'], 255)} ${headerField(options.appName, 48)} ` +
    `${process.pid} ${headerField(fields['event'], 32)} ${sd} ${payload}`;
  return `${Buffer.byteLength(message, 'utf8')} ${message}`;
}
