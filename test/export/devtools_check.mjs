// devtools_check.mjs: loads a cudaspy Chrome trace with Chrome DevTools' own
// trace engine (@paulirish/trace_engine, pinned by devtools_check.sh) and
// checks what it built: every thread with X events is a track with its
// thread_name, it kept every slice, and its call tree nests (each child lies
// inside its parent). Usage: node devtools_check.mjs TRACE.json
import fs from 'node:fs';
import {analyzeEvents} from '@paulirish/trace_engine/analyze-trace.mjs';

const file = process.argv[2];
const events = JSON.parse(fs.readFileSync(file, 'utf8')).traceEvents;
const want = new Map(), names = new Map();
for (const e of events) {
  const k = e.pid + '/' + e.tid;
  if (e.ph === 'X') want.set(k, (want.get(k) || 0) + 1);
  if (e.ph === 'M' && e.name === 'thread_name') names.set(k, e.args.name);
}
const {parsedTrace} = await analyzeEvents(events);
const procs = parsedTrace.data.Renderer.processes;
let problems = 0, nthreads = 0, nentries = 0;
function bad(msg) { if (problems++ < 20) console.error('devtools_check: ' + file + ': ' + msg); }
function walk(node, k) {
  for (const c of node.children) {
    const pe = node.entry, ce = c.entry;
    if (ce.ts < pe.ts || ce.ts + (ce.dur || 0) > pe.ts + (pe.dur || 0))
      bad(k + ': ' + ce.name + ' at ' + ce.ts + ' is not inside ' + pe.name + ' at ' + pe.ts);
    walk(c, k);
  }
}
for (const [k, n] of want) {
  const [pid, tid] = k.split('/').map(Number);
  const t = procs.get(pid)?.threads.get(tid);
  if (!t) { bad('no track for thread ' + k); continue; }
  nthreads++;
  nentries += t.entries.length;
  if (t.name !== names.get(k)) bad(k + ': track named ' + t.name + ', want ' + names.get(k));
  if (t.entries.length !== n) bad(k + ': ' + t.entries.length + ' slices, want ' + n);
  if (!t.tree) { bad(k + ': no call tree'); continue; }
  for (const r of t.tree.roots) walk(r, k);
}
if (problems) { console.error('devtools_check: ' + problems + ' problems'); process.exit(1); }
console.log('devtools_check: ok: ' + nthreads + ' threads, ' + nentries + ' slices');
