import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AuditReport, Listed, Row } from './report.js';
import { formatVerifyResult } from './verify.js';

/**
 * The audit report as one self-contained HTML page: the data, the charting library and the
 * script that draws with it are all inside, so the page opens from a mail attachment or a
 * ticket with no network. A content security policy forbids the page any request at all: the
 * records shown are text a model or an upstream chose, and must never be able to load or send
 * anything.
 *
 * Charts use Chart.js, inlined from its UMD build when the report is written.
 */
export function renderAuditReportHtml(
  report: AuditReport,
  options: { readonly generated?: Date } = {},
): string {
  const generated = (options.generated ?? new Date()).toISOString();
  const verified = report.verify.ok;
  const title = `mcp-warden audit report: ${path.basename(report.files.at(-1) ?? 'audit log')}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${escape(title)}</h1>
<p>${escape(report.records.toLocaleString('en'))} records in ${report.files.length} file(s), ${escape(report.from ?? '-')} to ${escape(report.to ?? '-')}${report.unreadable > 0 ? `; ${report.unreadable} unreadable line(s)` : ''}. Written ${escape(generated)}.</p>
</header>
<section class="status ${verified ? 'ok' : 'broken'}" id="verification">
<h2>Hash chain: ${verified ? 'intact' : 'BROKEN'}</h2>
<pre>${escape(formatVerifyResult(report.verify))}</pre>
<p>${escape(checkpointText(report))}</p>
</section>
<section class="charts">
<figure class="wide"><figcaption>Calls over time (per ${escape(duration(report.timeline.bucketMs))})</figcaption><div class="chart"><canvas id="chart-timeline"></canvas></div></figure>
<figure><figcaption>Decisions by effect</figcaption><div class="chart"><canvas id="chart-effects"></canvas></div></figure>
<figure><figcaption>Decisions by rule</figcaption><div class="chart"><canvas id="chart-rules"></canvas></div></figure>
<figure><figcaption>Top tools</figcaption><div class="chart"><canvas id="chart-tools"></canvas></div></figure>
<figure><figcaption>Top servers</figcaption><div class="chart"><canvas id="chart-servers"></canvas></div></figure>
</section>
<section><h2>Tools</h2>${rowsTable(report.tools, 'Tool')}</section>
<section><h2>Servers</h2>${rowsTable(report.servers, 'Server')}</section>
<section><h2>Principals</h2>${table(
    ['Principal', 'Host', 'Calls'],
    report.principals.map((p) => [p.principal, p.host || '-', String(p.calls)]),
  )}
${table(
  ['Host application', 'Calls'],
  report.clients.map((c) => [c.client, String(c.calls)]),
)}</section>
<section id="denials"><h2>Denials (${report.denials.total})</h2>${listed(report.denials, denialLine)}</section>
<section id="errors"><h2>Errors (${report.errors.total})</h2>${listed(report.errors, errorLine)}</section>
<script id="report-data" type="application/json">${scriptJson(chartData(report))}</script>
<script>${scriptText(chartLibrary())}</script>
<script>${DRAW}</script>
</body>
</html>
`;
}

/**
 * The charting library's browser build. The build copies it beside the bundle's chunks
 * (scripts/bundle.mjs), so an installed gateway carries it and needs no chart.js package; run
 * from source (the unit tests), it is read from the chart.js development dependency.
 */
function chartLibrary(): string {
  const file = import.meta.url.endsWith('.ts')
    ? path.join(path.dirname(createRequire(import.meta.url).resolve('chart.js')), CHART_FILE)
    : fileURLToPath(new URL(`./assets/${CHART_FILE}`, import.meta.url));
  return readFileSync(file, 'utf8');
}

const CHART_FILE = 'chart.umd.min.js';

/** The numbers the charts draw (the tables are written as HTML). */
function chartData(report: AuditReport): object {
  const top = (rows: readonly Row[]) => rows.slice(0, 15);
  return {
    timeline: report.timeline,
    effects: report.effects,
    rules: report.rules.slice(0, 15).map((r) => ({ label: `${r.rule} (${r.effect})`, count: r.count })),
    tools: top(report.tools),
    servers: top(report.servers),
  };
}

function checkpointText(report: AuditReport): string {
  const checkpoint = report.checkpoint;
  if (checkpoint === null)
    return 'Checkpoints: none in this trail. Records cut from its very end cannot be detected from the file alone.';
  return `Checkpoints: ${checkpoint.count}; the last at seq ${String(checkpoint.seq)}, ${String(checkpoint.ts)}. Verify its signature with the public key to prove the records up to it.`;
}

function denialLine(record: Record<string, unknown>): string {
  const decision = record.decision as { rule?: unknown; reason?: unknown } | undefined;
  const rule = typeof decision?.rule === 'string' ? `rule ${decision.rule}` : 'policy default';
  return `${str(record.ts)} ${target(record)}: ${rule}${typeof record.pin === 'string' ? `, pin ${record.pin}` : ''}`;
}

function errorLine(record: Record<string, unknown>): string {
  return `${str(record.ts)} ${target(record)}: ${str(record.outcome)}${typeof record.error === 'string' ? `: ${record.error}` : ''}`;
}

function target(record: Record<string, unknown>): string {
  if (record.type === 'call') return `${str(record.tool)} (${str(record.server)})`;
  return `${str(record.method)} ${str(record.target ?? '')} (${str(record.server)})`.replace('  ', ' ');
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : value === undefined ? '' : JSON.stringify(value);
}

/** Each record under a one-line summary that opens to the whole record. */
function listed(list: Listed, line: (record: Record<string, unknown>) => string): string {
  if (list.total === 0) return '<p>None.</p>';
  const more =
    list.total > list.records.length
      ? `<p>The ${list.records.length} most recent of ${list.total} are listed.</p>`
      : '';
  return `${more}${list.records
    .map(
      (record) =>
        `<details><summary>${escape(line(record))}</summary><pre>${escape(JSON.stringify(record, null, 2))}</pre></details>`,
    )
    .join('\n')}`;
}

function rowsTable(rows: readonly Row[], what: string): string {
  return table(
    [what, 'Calls', 'Denied', 'Errors'],
    rows.map((r) => [r.name, String(r.calls), String(r.denied), String(r.errors)]),
  );
}

function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return '<p>None.</p>';
  const cells = (row: readonly string[], tag: string) =>
    row.map((c) => `<${tag}>${escape(c)}</${tag}>`).join('');
  return `<table><thead><tr>${cells(head, 'th')}</tr></thead><tbody>${rows
    .map((row) => `<tr>${cells(row, 'td')}</tr>`)
    .join('')}</tbody></table>`;
}

function duration(ms: number): string {
  if (ms % 86_400_000 === 0) return `${ms / 86_400_000} day(s)`;
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} hour(s)`;
  if (ms % 60_000 === 0) return `${ms / 60_000} minute(s)`;
  return `${Math.round(ms / 1000)} s`;
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** JSON inside a script element: nothing in it may close the element or open a comment. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** Script text inlined as is, except a closing tag inside it (none today; checked, not assumed). */
function scriptText(text: string): string {
  return text.replace(/<\/script/gi, '<\\/script');
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px 48px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:24px 0 4px}h2{font-size:17px;margin:28px 0 8px}
.status{border-radius:6px;padding:4px 16px;margin:16px 0}.status.ok{background:#e7f6ec;border:1px solid #5cb176}
.status.broken{background:#fdeaea;border:1px solid #d9534f}.status pre{white-space:pre-wrap}
.charts{display:grid;grid-template-columns:repeat(2,minmax(0,1fr));gap:16px}
figure{margin:0;border:1px solid #dde1e8;border-radius:6px;padding:8px}figure.wide{grid-column:1/-1}
figcaption{font-weight:600;margin-bottom:4px}.chart{position:relative;height:260px}
table{border-collapse:collapse;margin:8px 0}th,td{border-bottom:1px solid #e3e6ec;padding:3px 12px 3px 0;text-align:left}
td:not(:first-child),th:not(:first-child){text-align:right}
details{border-bottom:1px solid #eef0f4;padding:2px 0}summary{cursor:pointer;font-family:ui-monospace,monospace;font-size:13px}
pre{background:#f6f7f9;padding:8px;overflow:auto;font-size:12px}
`;

/** Draws the charts from the embedded data; marks the body when done (what tests wait for). */
const DRAW = `
(function () {
  var data = JSON.parse(document.getElementById('report-data').textContent);
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  var colours = { ok: '#3c8d5a', denied: '#d9534f', errors: '#e0a030', allow: '#3c8d5a', deny: '#d9534f', confirm: '#4a78c2' };
  function bar(id, labels, values, colour, horizontal) {
    return new Chart(document.getElementById(id), {
      type: 'bar',
      data: { labels: labels, datasets: [{ label: 'calls', data: values, backgroundColor: colour }] },
      options: { indexAxis: horizontal ? 'y' : 'x', plugins: { legend: { display: false } } }
    });
  }
  var t = data.timeline;
  new Chart(document.getElementById('chart-timeline'), {
    type: 'bar',
    data: {
      labels: t.starts.map(function (s) { return s.slice(0, 16).replace('T', ' '); }),
      datasets: [
        { label: 'ok', data: t.ok, backgroundColor: colours.ok },
        { label: 'denied', data: t.denied, backgroundColor: colours.denied },
        { label: 'errors', data: t.errors, backgroundColor: colours.errors }
      ]
    },
    options: { scales: { x: { stacked: true }, y: { stacked: true, beginAtZero: true } } }
  });
  var effects = Object.keys(data.effects);
  new Chart(document.getElementById('chart-effects'), {
    type: 'doughnut',
    data: {
      labels: effects,
      datasets: [{ data: effects.map(function (e) { return data.effects[e]; }),
        backgroundColor: effects.map(function (e) { return colours[e] || '#888'; }) }]
    }
  });
  bar('chart-rules', data.rules.map(function (r) { return r.label; }), data.rules.map(function (r) { return r.count; }), '#4a78c2', true);
  bar('chart-tools', data.tools.map(function (r) { return r.name; }), data.tools.map(function (r) { return r.calls; }), '#6a5acd', true);
  bar('chart-servers', data.servers.map(function (r) { return r.name; }), data.servers.map(function (r) { return r.calls; }), '#2a9d8f', false);
  document.body.setAttribute('data-charts', 'drawn');
})();
`;
