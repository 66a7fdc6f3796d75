import { start, med } from './common.mjs';
const modes = process.argv.slice(2);
const insts = [];
for (const m of modes) insts.push({ m, ...(await start(m)), lat: [] });
for (const i of insts) i.params = JSON.stringify({ name: `${i.prefix}echo`, arguments: { text: 'hello from the warden bench' } });
for (const i of insts) for (let k = 0; k < 2000; k++) await i.child.request('tools/call', i.params);
for (let b = 0; b < 20; b++) for (const i of insts) for (let k = 0; k < 250; k++) { const t = performance.now(); await i.child.request('tools/call', i.params); i.lat.push((performance.now() - t) * 1000); }
for (const i of insts) console.log(i.m.padEnd(14), 'p50', med(i.lat).toFixed(0), 'µs');
for (const i of insts) { await i.child.close(); process.stderr.write(i.m + ': ' + i.child.stderrTail.slice(-120) + '\n'); }
