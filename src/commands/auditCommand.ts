/** `mcp-warden audit verify|summary|report|keygen`: reading and checking an audit trail. */
import path from 'node:path';
import { plural } from '../lib/plural.js';
import type { CommandResult } from './audit.js';
import { CommandError, noMore, UsageError, type CommandInput } from './support.js';

export async function runAudit({ values, args }: CommandInput): Promise<number | undefined> {
  const [sub, file, ...extra] = args;
  const { auditKeygen, auditPending, auditVerify } = await import('./audit.js');
  if (sub !== 'keygen' && values.out !== undefined)
    throw new UsageError('--out applies to audit keygen only');
  if (sub !== 'verify' && (values.key !== undefined || values.anchor !== undefined))
    throw new UsageError('--key and --anchor apply to audit verify only');
  if (sub === 'keygen') {
    noMore(args.slice(1));
    return finish(await auditKeygen(values.out));
  }
  if ((sub !== 'verify' && sub !== 'summary' && sub !== 'report') || file === undefined)
    throw new UsageError(
      'usage: mcp-warden audit verify FILE | mcp-warden audit summary FILE | mcp-warden audit report FILE --html OUT.html | mcp-warden audit keygen',
    );
  if (sub === 'report' && (values.html === undefined || values.html === ''))
    throw new UsageError('audit report needs --html OUT.html (the page to write)');
  noMore(extra);
  const base = path.resolve(file);
  const { statSync } = await import('node:fs');
  if (sub === 'summary' && statSync(base, { throwIfNoEntry: false })?.isDirectory() === true) {
    // A trail without a local file is, on this machine, only what waits in its spools.
    const pending = await auditPending(base, { root: true });
    process.stdout.write(
      pending === '' ? `nothing waits in ${base}: the sinks have every record\n` : pending.slice(1),
    );
    return undefined;
  }
  const { auditFileSet } = await import('../features/audit/files.js');
  // Reading nothing would report an empty (or broken) log: say that there is none instead.
  if (auditFileSet(base).files.length === 0)
    throw new CommandError(
      `no audit log at ${base} (nor rotated files ${path.basename(base)}.1, .2, ...); check the path, or audit.file in the config (with audit.file: false the records are at the sinks only; audit summary SPOOL says what waits for them)`,
    );
  if (sub === 'verify')
    return finish(
      await auditVerify(base, {
        ...(values.key !== undefined && { key: values.key }),
        ...(values.anchor !== undefined && { anchor: values.anchor }),
      }),
    );
  if (sub === 'report') return auditReport(base, path.resolve(values.html!));
  const { formatSummary, summarizeAudit } = await import('../features/audit/summary.js');
  process.stdout.write(formatSummary(summarizeAudit(base)) + (await auditPending(base)));
  return undefined;
}

/** A result of verify or keygen, printed; its code is the exit code. */
function finish(result: CommandResult): number {
  if ('usage' in result) throw new UsageError(result.usage);
  if ('error' in result) throw new CommandError(result.error, result.code);
  process.stdout.write(result.stdout);
  return result.code;
}

/** Writes the HTML report of the audit log at `base` to `out`, and says what it found. */
async function auditReport(base: string, out: string): Promise<undefined> {
  const [{ buildAuditReport }, { renderAuditReportHtml }, { writeFileSync }] = await Promise.all([
    import('../features/audit/report.js'),
    import('../features/audit/reportHtml.js'),
    import('node:fs'),
  ]);
  const report = buildAuditReport(base);
  try {
    writeFileSync(out, renderAuditReportHtml(report));
  } catch (error) {
    throw new CommandError(`could not write ${out}: ${(error as Error).message}`);
  }
  process.stdout.write(
    `wrote ${out}: ${plural(report.records, 'record')}, ${plural(report.denials.total, 'denial')}, ${plural(report.errors.total, 'error')}\n`,
  );
  if (!report.verify.ok)
    process.stderr.write(
      `mcp-warden: the hash chain is broken (shown on the page): ${report.verify.problem}\n`,
    );
  return undefined;
}
