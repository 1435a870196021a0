#!/usr/bin/env python3
"""doc_claims.py: what the docs say the code has, checked against the code
(issue 36), so that a tool, cause, bucket or JSON key added to one cannot
leave the other behind:
  mcp     the tools `cudaspy-analyze mcp` lists (tools/list, over stdio, on a
          gen_run run) are exactly the tools of docs/mcp.md's tool table and
          of `mcp --help`'s Tools: line, and every "N tools" or "N read-only
          tools" in README.md and docs/mcp.md says how many there are;
  causes  docs/json.md's `cause` row names every finding cause the analyzer
          can emit (chains_cause_names in analyzer/rules/chains.c, and each
          `"cause", "NAME"` literal in analyzer/rules/*.c), and no other;
  buckets docs/json.md's bucket table names exactly the account's buckets
          (bucket_names in analyzer/rules/account.c);
  keys    every top-level key of `cudaspy-analyze --json --by
          pid,stream,kernel,pyline` on a gen_run run is in docs/json.md's
          "Top level" table.
A failed check prints `FILE:LINE: what: got X, want Y`; exit 1 if any did.
Usage: doc_claims.py SOURCE_DIR CUDASPY_ANALYZE GEN_RUN WORK_DIR"""
import json
import os
import re
import shutil
import subprocess
import sys

NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve "
           "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty").split()
failures = []


def fail(where, what, got, want):
    failures.append(f"{where}: {what}: got {got}, want {want}")


def read(src, rel):
    with open(os.path.join(src, rel), encoding="utf-8") as f:
        return f.read()


def same(where, what, doc, code):
    """Fail for each name of @code the docs lack, and each they have in excess."""
    if code - doc:
        fail(where, f"{what} the analyzer has that the docs lack", sorted(code - doc), "none")
    if doc - code:
        fail(where, f"{what} the docs name that the analyzer lacks", sorted(doc - code), "none")


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def ticked(cell):
    """The `code` names in a Markdown table cell."""
    return re.findall(r"`([^`]+)`", cell)


def table_after(text, heading, first_col):
    """Rows (cells, line) of the first table under @heading whose header's
    first cell is @first_col; the section ends at the next heading."""
    start = text.find(heading)
    if start < 0:
        fail("docs", f"heading {heading.strip()!r}", "not found", "the table under it")
        return []
    end = text.find("\n#", start + len(heading))
    rows, inside = [], False
    for n, line in enumerate(text[start:end if end > 0 else None].split("\n")):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            if inside:
                break
            continue
        if not inside:
            inside = cells[0] == first_col
            continue
        if set(line) <= set("|-: "):
            continue
        rows.append((cells, line_of(text, start) + n))
    return rows


def c_strings(src, rel, array):
    """String literals of C array @array in @rel (its initializer)."""
    text = read(src, rel)
    m = re.search(r"\b" + re.escape(array) + r"\s*\[[^]]*\]\s*=\s*\{(.*?)\};", text, re.S)
    if not m:
        fail(rel, f"array {array}", "not found", "its initializer")
        return []
    return re.findall(r'"([^"]*)"', m.group(1))


def mcp_tools(analyze, run):
    """Tool names from tools/list of a server on @run, in order."""
    reqs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "doc_claims", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]
    p = subprocess.run([analyze, "mcp", run], input="".join(json.dumps(r) + "\n" for r in reqs),
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail("cudaspy-analyze mcp", "exit status", p.returncode, f"0 (stderr: {p.stderr.strip()})")
        return []
    for line in p.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("id") == 2:
            return [t["name"] for t in msg["result"]["tools"]]
    fail("cudaspy-analyze mcp", "tools/list", "no answer", "the tool list")
    return []


def check_mcp(src, analyze, run):
    tools = mcp_tools(analyze, run)
    if not tools:
        return
    rows = table_after(read(src, "docs/mcp.md"), "\n## Tools\n", "tool")
    doc = [ticked(cells[0])[0] for cells, _ in rows if ticked(cells[0])]
    where = f"docs/mcp.md:{rows[0][1] if rows else 0}"
    same(where, "tools of the tool table", set(doc), set(tools))
    if len(doc) != len(set(doc)):
        fail(where, "rows of the tool table", len(doc), f"{len(set(doc))}, one a tool")
    help_text = subprocess.run([analyze, "mcp", "--help"], capture_output=True, text=True).stdout
    m = re.search(r"^Tools: (.*?)\.\n", help_text, re.S | re.M)
    listed = re.split(r",\s*", m.group(1)) if m else []
    same("cudaspy-analyze mcp --help", "tools of its Tools: line", set(listed), set(tools))
    counted = 0
    for rel in ("README.md", "docs/mcp.md"):
        text = read(src, rel)
        for m in re.finditer(r"\b(\w+) (?:read-only )?(?:MCP )?tools\b", text):
            word = m.group(1).lower()
            n = int(word) if word.isdigit() else NUMBERS.index(word) if word in NUMBERS else None
            if n is None:
                continue
            counted += 1
            if n != len(tools):
                fail(f"{rel}:{line_of(text, m.start())}", f"'{m.group(0)}'", n, len(tools))
    if counted == 0:
        fail("README.md, docs/mcp.md", "statements of the tool count", 0, "at least one")


def check_causes(src):
    code = set(c_strings(src, "analyzer/rules/chains.c", "chains_cause_names"))
    rules = os.path.join(src, "analyzer", "rules")
    for f in sorted(os.listdir(rules)):
        if f.endswith(".c"):  # a finding made outside chains.c: ranks.c's rank_straggler
            code |= set(re.findall(r'"cause",\s*"([a-z_]+)"', read(rules, f)))
    text = read(src, "docs/json.md")
    rows = [(c, n) for c, n in table_after(text, "\n## `chains[]`\n", "key") if c[0] == "`cause`"]
    if len(rows) != 1:
        fail("docs/json.md", "`cause` rows in the chains[] table", len(rows), 1)
        return
    cells, n = rows[0]
    same(f"docs/json.md:{n}", "causes", set(ticked(cells[1])), code)


def check_buckets(src):
    code = set(c_strings(src, "analyzer/rules/account.c", "bucket_names"))
    text = read(src, "docs/json.md")
    rows = table_after(text, "\nBuckets (owner in brackets):\n", "bucket")
    # "`host_code` (`host_bound`)": the owning cause follows in brackets
    doc = {b for cells, _ in rows for b in ticked(cells[0].split("(")[0])}
    same(f"docs/json.md:{rows[0][1] if rows else 0}", "account buckets", doc, code)


def check_keys(src, analyze, run):
    p = subprocess.run([analyze, "--json", "--by", "pid,stream,kernel,pyline", run],
                       capture_output=True, text=True, timeout=60)
    if p.returncode not in (0, 1):
        fail("cudaspy-analyze --json", "exit status", p.returncode, f"0 or 1 ({p.stderr.strip()})")
        return
    keys = list(json.loads(p.stdout))
    text = read(src, "docs/json.md")
    rows = table_after(text, "\n## Top level\n", "key")
    doc = {k for cells, _ in rows for k in ticked(cells[0])}
    missing = [k for k in keys if k not in doc]
    if missing:
        fail(f"docs/json.md:{rows[0][1] if rows else 0}", "top-level keys of --json not in "
             "the Top level table", missing, "none")


def main():
    if len(sys.argv) != 5:
        print(__doc__.rsplit("\n", 1)[-1], file=sys.stderr)
        return 2
    src, analyze, gen_run, work = sys.argv[1:]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    run = os.path.join(work, "clean.lmdb")
    subprocess.run([gen_run, "clean", run, "--steps", "50"], check=True)
    check_mcp(src, analyze, run)
    check_causes(src)
    check_buckets(src)
    check_keys(src, analyze, run)
    for f in failures:
        print(f)
    if failures:
        return 1
    print("ok   doc_claims (tools, causes, buckets, top-level keys)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
