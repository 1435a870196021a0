// e2e.mjs: end-to-end test of `cudaspy-analyze mcp` with the real MCP SDK
// client (@modelcontextprotocol/sdk, Client + StdioClientTransport): the
// handshake, tools/list (every input schema compiled with the SDK's ajv),
// every tool on real run files with figures equal to `cudaspy-analyze
// --json` and `gate --json` (the account's buckets summing to its window),
// the investigate prompt, and bad arguments.
// Usage: MCP_CLIENT_DIR=DIR node e2e.mjs CUDASPY_ANALYZE TREE.lmdb CLEAN.lmdb
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { isDeepStrictEqual } from 'node:util';

const require = createRequire(path.join(process.env.MCP_CLIENT_DIR, 'package.json'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
const Ajv = require('ajv').default;
const Ajv2020 = require('ajv/dist/2020').default;

const [bin, tree, clean] = process.argv.slice(2);
let failed = 0;
// Taken from tree's --json so the same checks run on synthetic and recorded runs.
let mainPid, api, nestedApi;

function check(name, ok, detail) {
  console.error(`${ok ? 'ok  ' : 'FAIL'} ${name}${ok || detail === undefined ? '' : ': ' + detail}`);
  if (!ok) failed++;
}

function analyze(...args) {
  let out;
  try {
    out = execFileSync(bin, args, { encoding: 'utf8', maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] });
  } catch (e) {
    out = e.stdout; // gate exits 1 when it fails; its JSON is still there
  }
  return JSON.parse(out);
}

const NUM_KEYS = ['count', 'total_ns', 'mean_ns', 'min_ns', 'p50_ns', 'p90_ns', 'p99_ns', 'p999_ns', 'max_ns', 'errors'];

// Latency rows equal, matched by (api, nested), every numeric figure.
function sameRows(mine, want) {
  if (mine.length !== want.length) return `${mine.length} rows, want ${want.length}`;
  for (const w of want) {
    const m = mine.find((r) => r.api === w.api && r.nested === w.nested);
    if (!m) return `no row ${w.api}`;
    for (const k of NUM_KEYS) if (m[k] !== w[k]) return `${w.api} ${k}: ${m[k]}, want ${w[k]}`;
  }
  return null;
}

async function call(client, name, args) {
  return client.callTool({ name, arguments: args });
}

async function toolsAndSchemas(client) {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  const want = ['compare_runs', 'get_account', 'get_api_latency', 'get_causal_chains', 'get_gpu_feed',
    'get_gpu_timeline', 'get_hotspots', 'get_memory', 'get_per_process_breakdown', 'get_steps',
    'get_timeline', 'get_top_stalls', 'get_trace_stats'];
  check('tools/list has the 13 tools', isDeepStrictEqual(names, want), names.join(','));
  for (const t of tools) {
    let err = null;
    try {
      new Ajv2020({ strict: true }).compile(t.inputSchema);
      new Ajv({ strict: true }).compile(t.inputSchema);
    } catch (e) {
      err = e.message;
    }
    check(`${t.name} inputSchema compiles (2020-12 and draft-07, strict)`, err === null, err);
    check(`${t.name} inputSchema is closed`, t.inputSchema.type === 'object' &&
      t.inputSchema.additionalProperties === false);
  }
  const lat = tools.find((t) => t.name === 'get_api_latency');
  const v = new Ajv2020({ strict: true }).compile(lat.inputSchema);
  check('schema rejects a missing required api', !v({}) && v({ api: 'cudaLaunchKernel', run: 0 }));
}

async function traceStats(client) {
  const want = analyze('--json', tree);
  const main = want.processes.find((p) => p.role === 'cuda_main') || want.processes[0];
  mainPid = main.pid;
  api = want.apis.find((r) => !r.nested).api;
  nestedApi = (want.apis.find((r) => r.nested) || {}).api;
  let r = await call(client, 'get_trace_stats', {});
  const s = r.structuredContent;
  check('get_trace_stats has text and JSON', !r.isError && r.content[0].type === 'text' &&
    r.content[0].text.includes('```json'));
  for (const k of ['duration_ns', 'cuda_records', 'host_records', 'outermost_calls', 'nested_calls'])
    check(`get_trace_stats summary.${k} equals --json`, s.summary[k] === want.run[k], `${s.summary[k]} vs ${want.run[k]}`);
  let d = sameRows(s.apis, want.apis);
  check('get_trace_stats latency table equals --json', d === null, d);

  r = await call(client, 'get_trace_stats', { pid: mainPid });
  d = sameRows(r.structuredContent.apis, analyze('--json', '--pid', String(mainPid), tree).apis);
  check('get_trace_stats pid equals --json --pid', d === null, d);

  const half = want.run.duration_ns / 2e6; // ms
  r = await call(client, 'get_trace_stats', { since_ms: half / 2, until_ms: half * 1.5 });
  d = sameRows(r.structuredContent.apis, analyze('--json', '--since', String(half / 2e3),
    '--until', String(half * 1.5e-3), tree).apis);
  check('get_trace_stats window equals --json --since --until', d === null, d);

  r = await call(client, 'get_trace_stats', { api });
  check('get_trace_stats api filter keeps one row', r.structuredContent.apis.length === 1);
  return want;
}

async function slices(client, want) {
  let r = await call(client, 'get_causal_chains', { top: 3 });
  check('get_causal_chains equals --json chains[0..3)', isDeepStrictEqual(r.structuredContent.chains,
    want.chains.slice(0, 3)) && r.structuredContent.total === want.chains.length);

  await account(client, want);

  r = await call(client, 'get_memory', {});
  const m = r.structuredContent;
  check('get_memory equals --json memory', !r.isError && want.memory !== undefined &&
    isDeepStrictEqual(m.processes, want.memory.processes) &&
    isDeepStrictEqual(m.failures, want.memory.failures) &&
    m.failures_total === want.memory.failures_total &&
    m.retry_episodes === want.memory.retry_episodes, JSON.stringify(m).slice(0, 300));

  r = await call(client, 'get_per_process_breakdown', {});
  check('get_per_process_breakdown equals --json processes',
    isDeepStrictEqual(r.structuredContent.processes, want.processes.slice(0, 50)));
  const other = want.processes[want.processes.length - 1].pid;
  r = await call(client, 'get_per_process_breakdown', { pid: other });
  check('get_per_process_breakdown pid filter', isDeepStrictEqual(r.structuredContent.processes,
    want.processes.filter((p) => p.pid === other)));

  r = await call(client, 'get_gpu_feed', {});
  check('get_gpu_feed equals --json gpu_feed', isDeepStrictEqual(r.structuredContent.processes,
    want.gpu_feed.processes) && isDeepStrictEqual(r.structuredContent.streams, want.gpu_feed.streams));

  r = await call(client, 'get_gpu_timeline', { bins: 20 });
  const g = r.structuredContent;
  check('get_gpu_timeline: the source and summary of --json gpu',
    g.source === want.gpu.source && g.summary.busy_pct === want.gpu.busy_pct &&
    g.summary.idle_ns === want.gpu.idle_ns &&
    isDeepStrictEqual(g.summary.idle_by_host_state, want.gpu.idle_by_host_state) &&
    isDeepStrictEqual(g.devices, want.gpu.devices), JSON.stringify(g.summary));
  check('get_gpu_timeline: 20 bins, each null or a percentage', g.bins.busy_pct.length === 20 &&
    g.bins.busy_pct.every((v) => v === null || (v >= 0 && v <= 100)));

  r = await call(client, 'get_steps', { limit: 3 });
  const s = r.structuredContent;
  check('get_steps: the steps of --json, 3 rows of them',
    s.source === want.steps.source && s.count === want.steps.count &&
    s.p99_ns === want.steps.p99_ns && isDeepStrictEqual(s.worst, want.steps.worst) &&
    s.setup !== undefined && isDeepStrictEqual(s.setup, want.steps.setup) &&
    isDeepStrictEqual(s.rows, (want.steps.rows || []).slice(0, 3)), JSON.stringify(s).slice(0, 300));
}

const sumNs = (bs) => bs.reduce((x, b) => x + b.ns, 0);

// get_account is --json's account, its buckets sum to the window (totals and each
// process), and each finding's impact is the time of the buckets it owns.
async function account(client, want) {
  const w = want.account;
  let r = await call(client, 'get_account', {});
  const a = r.structuredContent;
  check('get_account equals --json account', !r.isError && a.source === w.source &&
    a.window_ns === w.window_ns && a.setup_ns === w.setup_ns && isDeepStrictEqual(a.buckets, w.buckets) &&
    isDeepStrictEqual(a.processes, w.processes), JSON.stringify(a).slice(0, 300));
  check('get_account buckets sum to window_ns', a.buckets.length > 0 && sumNs(a.buckets) === a.window_ns &&
    a.sum_ns === a.window_ns, `${sumNs(a.buckets)} / ${a.sum_ns} vs ${a.window_ns}`);
  check('get_account: each process\'s buckets sum to its window_ns', a.processes.length > 0 &&
    a.processes.every((p) => sumNs(p.buckets) === p.window_ns && p.sum_ns === p.window_ns));
  check('get_account text ends the table with the sum and the window',
    /\n  sum +\S+ \S+ +\(the window: /.test(r.content[0].text), r.content[0].text.slice(0, 300));
  const pid = a.processes[0].pid;
  r = await call(client, 'get_account', { pid });
  check('get_account pid keeps that process and the totals', r.structuredContent.processes.length > 0 &&
    r.structuredContent.processes.every((p) => p.pid === pid) &&
    isDeepStrictEqual(r.structuredContent.buckets, w.buckets));

  const byName = Object.fromEntries(w.buckets.map((b) => [b.name, b]));
  const chains = (await call(client, 'get_causal_chains', { top: 100 })).structuredContent.chains;
  for (const c of chains) {
    check(`finding ${c.cause}: impact_lo_ns <= impact_ns <= impact_hi_ns, if_fixed present`,
      c.impact_lo_ns <= c.impact_ns && c.impact_ns <= c.impact_hi_ns && 'if_fixed' in c &&
      (c.if_fixed === null || typeof c.if_fixed.text === 'string'), JSON.stringify(c.if_fixed));
    if (c.owns && c.owns.length)
      check(`finding ${c.cause}: impact is the time of the buckets it owns`,
        c.impact_ns === c.owns.reduce((x, n) => x + (byName[n] ? byName[n].ns : 0), 0),
        `${c.impact_ns} vs ${c.owns.join('+')}`);
  }
}

async function apiLatency(client, want) {
  const cases = [[{ api }, false], [{ api, pid: mainPid }, false]];
  if (nestedApi) cases.push([{ api: nestedApi, nested: 'nested' }, true]);
  for (const [args, nested] of cases) {
    const r = await call(client, 'get_api_latency', args);
    const s = r.structuredContent;
    const row = want.apis.find((a) => a.api === args.api && a.nested === nested);
    const bad = NUM_KEYS.filter((k) => s[k] !== row[k]);
    check(`get_api_latency ${JSON.stringify(args)} equals --json row`, bad.length === 0, bad.join(','));
    const sum = s.histogram.reduce((a, b) => a + b.count, 0);
    check(`get_api_latency ${JSON.stringify(args)} histogram sums to count`, sum === s.count);
  }
  // Kernel and stream filters against the analyzer's split tables.
  const byK = analyze('--json', '--by', 'kernel', tree).apis_by_kernel.find((r) => !r.nested && r.kernel);
  const byS = analyze('--json', '--by', 'stream', tree).apis_by_stream.find((r) => !r.nested);
  for (const [args, row] of [[{ api: byK.api, kernel: byK.kernel }, byK],
    [{ api: byS.api, pid: byS.pid, stream: byS.stream }, byS]]) {
    for (const pass of ['first', 'again']) {
      const s = (await call(client, 'get_api_latency', args)).structuredContent;
      const bad = NUM_KEYS.filter((k) => s[k] !== row[k]);
      check(`get_api_latency ${JSON.stringify(args)} (${pass}) equals --by row`, bad.length === 0, bad.join(','));
    }
  }
}

// Every event of the main process in 40 ms from its first event, @p limit a page.
async function pages(client, win, limit) {
  const events = [];
  let cursor;
  for (let n = 0; n < 400; n++) {
    const args = { pid: mainPid, since_ms: win[0], until_ms: win[1], limit };
    if (cursor) args.cursor = cursor;
    const p = (await call(client, 'get_timeline', args)).structuredContent;
    events.push(...p.events);
    cursor = p.nextCursor;
    if (!cursor) break;
  }
  return events;
}

async function timeline(client) {
  const first = (await call(client, 'get_timeline', { pid: mainPid, limit: 1 })).structuredContent.events[0];
  const since = Math.floor(first.t_ns / 1e6), win = [since, since + 40];
  const big = await pages(client, win, 500), small = await pages(client, win, 37);
  check('get_timeline pages of 37 and of 500 give the same events', big.length > 0 &&
    isDeepStrictEqual(small, big), `${small.length} vs ${big.length}`);
  check('get_timeline is in time order', big.every((e, i) => i === 0 || big[i - 1].t_ns <= e.t_ns));
  const calls = big.filter((e) => e.kind === 'cuda' && e.api === api && !e.nested).length;
  const row = analyze('--json', '--pid', String(mainPid), '--since', String(win[0] / 1e3),
    '--until', String(win[1] / 1e3), tree).apis.find((a) => a.api === api && !a.nested);
  check('get_timeline calls equal --json --since --until count', calls === (row ? row.count : 0),
    `${calls} vs ${row && row.count}`);
}

async function stalls(client, want) {
  const r = await call(client, 'get_top_stalls', { pid: mainPid, top: 5 });
  const s = r.structuredContent.stalls;
  const p = want.processes.find((q) => q.pid === mainPid);
  check('get_top_stalls longest equals --json max_stall_ns', (s.length ? s[0].dur_ns : 0) === p.max_stall_ns,
    `${s[0] && s[0].dur_ns} vs ${p.max_stall_ns}`);
  check('get_top_stalls sorted longest first', s.every((e, i) => i === 0 || s[i - 1].dur_ns >= e.dur_ns));
}

async function compare(client) {
  const want = analyze('gate', '--baseline', clean, tree, '--json');
  const r = await call(client, 'compare_runs', { base: path.basename(clean), new: 0 });
  const again = await call(client, 'compare_runs', { new: 0, base: 1 });
  check('compare_runs by index equals by basename', isDeepStrictEqual(again.structuredContent, r.structuredContent));
  const s = r.structuredContent;
  const pick = (rows) => rows.map((x) => [x.api, x.base_calls, x.new_calls, x.base_ns, x.new_ns, x.verdict, x.ci]);
  check('compare_runs verdict equals gate --json', s.verdict === want.verdict && s.regressed === want.regressed,
    `${s.verdict}/${s.regressed} vs ${want.verdict}/${want.regressed}`);
  check('compare_runs rows equal gate --json', isDeepStrictEqual(pick(s.rows), pick(want.rows)));
  const crit = (cs) => (cs || []).map((x) => [x.criterion, x.name, x.verdict, x.note]);
  check('compare_runs criteria equal gate --json (step time, API time, GPU idle, findings)',
    s.criteria.length > 0 && isDeepStrictEqual(crit(s.criteria), crit(want.criteria)) &&
    s.run_regressed === want.run_regressed, JSON.stringify(crit(s.criteria)).slice(0, 300));
}

async function prompt(client) {
  const { prompts } = await client.listPrompts();
  check('prompts/list has investigate', prompts.some((p) => p.name === 'investigate'));
  const p = await client.getPrompt({ name: 'investigate', arguments: { run: '0' } });
  const text = p.messages[0].content.text;
  check('investigate orders stats, chains, per-process, timeline', ['get_trace_stats', 'get_causal_chains',
    'get_per_process_breakdown', 'get_timeline'].every((t, i, a) => i === 0 || text.indexOf(a[i - 1]) < text.indexOf(t)));
  check('investigate says to quote numbers only from tool results', text.includes('quote numbers only from tool results'));
}

async function badArguments(client) {
  const cases = [['get_api_latency', {}], ['get_trace_stats', { pid: 'x' }], ['get_trace_stats', { bogus: 1 }],
    ['get_trace_stats', { run: 9 }], ['get_trace_stats', { run: '../tree.lmdb' }], ['get_timeline', {}],
    ['get_timeline', { pid: mainPid, cursor: 'junk' }], ['get_trace_stats', { since_ms: 5, until_ms: 1 }],
    ['compare_runs', { base: 0 }], ['get_top_stalls', { class: 'nap' }], ['get_account', { pid: 1 }],
    ['get_account', { top: 3 }]];
  for (const [name, args] of cases) {
    const r = await call(client, name, args);
    check(`${name} ${JSON.stringify(args)} is a tool error`, r.isError === true && r.structuredContent === undefined);
  }
  let code = null;
  try {
    await call(client, 'no_such_tool', {});
  } catch (e) {
    code = e.code;
  }
  check('unknown tool is JSON-RPC error -32602', code === -32602, code);
}

async function main() {
  const transport = new StdioClientTransport({ command: bin, args: ['mcp', tree, clean], stderr: 'ignore' });
  const client = new Client({ name: 'cudaspy-e2e', version: '1.0.0' });
  await client.connect(transport);
  check('handshake: server is cudaspy-analyze', client.getServerVersion().name === 'cudaspy-analyze');
  check('handshake: tools and prompts capabilities', !!client.getServerCapabilities().tools &&
    !!client.getServerCapabilities().prompts);
  await client.ping();
  await toolsAndSchemas(client);
  const want = await traceStats(client);
  await slices(client, want);
  await apiLatency(client, want);
  await timeline(client);
  await stalls(client, want);
  await compare(client);
  await prompt(client);
  await badArguments(client);
  await client.ping();
  check('server alive after bad arguments', true);
  await client.close();
  console.error(failed ? `${failed} failed` : 'all passed');
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.error('FAIL', e);
  process.exit(1);
});
