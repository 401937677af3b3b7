#!/usr/bin/python3
"""Runs the ONNX backend node tests through `backplane onnx-test` and reports coverage.

Each test directory (model.onnx + test_data_set_*/input_*.pb, output_*.pb) runs in its own
`backplane onnx-test DIR` process with a timeout; the C++ side reads the TensorProtos, imports,
runs and compares (rtol/atol as numpy.testing.assert_allclose). This script only schedules,
collects and writes the JSON report and docs/onnx-coverage.md. Python 3 standard library only.

  scripts/onnx-node-tests.py                      # every test, report + docs/onnx-coverage.md
  scripts/onnx-node-tests.py --floor 120 --no-doc # CI: fail when fewer than 120 pass
"""
import argparse
import collections
import concurrent.futures
import datetime
import json
import os
import platform
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = "/usr/share/libonnx-testdata/data/node"


def run_one(backplane, directory, rtol, atol, timeout):
    name = os.path.basename(directory)
    cmd = [backplane, "onnx-test", directory, "--rtol", str(rtol), "--atol", str(atol)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"test": name, "status": "failed", "reason": f"timeout after {timeout} s", "op_types": []}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    err = (proc.stderr.strip().splitlines() or [""])[-1]
    return {"test": name, "status": "failed", "op_types": [],
            "reason": f"backplane exited with {proc.returncode}: {err}"[:300]}


def snake(op_type):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", op_type).lower()


def attribute(results):
    """The ONNX op type each test exercises: its single op, or the op its name starts with."""
    by_name = {r["test"]: r for r in results}
    for r in results:
        ops = r.get("op_types") or []
        base = r["test"][len("test_"):]
        expanded = base.endswith("_expanded")
        if expanded:
            base = base[: -len("_expanded")]
            plain = by_name.get("test_" + base)
            if plain and len(plain.get("op_types") or []) == 1:
                r["op"] = plain["op_types"][0]
                continue
        if len(ops) == 1:
            r["op"] = ops[0]
            continue
        matches = [o for o in ops if base.replace("_", "").startswith(snake(o).replace("_", ""))]
        r["op"] = max(matches, key=len) if matches else (ops[0] if ops else base.split("_")[0])


def summarize_reason(reason):
    """A reason without node names and data-set numbers, for grouping."""
    s = re.sub(r"^onnx: model\.onnx: ", "", reason)
    s = re.sub(r"node '[^']*' ", "", s)
    s = re.sub(r"test_data_set_\d+: ", "", s)
    s = re.sub(r"\$\.nodes\[\d+\]", "$.nodes[i]", s)
    s = re.sub(r"'[^']*'", "'…'", s)
    s = re.sub(r"-?\d+(\.\d+)?(e[-+]?\d+)?", "N", s)
    return s[:160]


def write_doc(path, results, args, elapsed):
    per_op = collections.OrderedDict()
    for r in sorted(results, key=lambda r: r["op"].lower()):
        c = per_op.setdefault(r["op"], collections.Counter())
        c[r["status"]] += 1
    totals = collections.Counter(r["status"] for r in results)
    try:
        version = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libonnx-testdata"],
                                 capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        version = "unknown"
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machine = f"{platform.node()} ({platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()})"
    lines = [
        "# ONNX backend node-test coverage",
        "",
        "Generated; do not edit. Made by `scripts/onnx-node-tests.py` "
        f"(`{' '.join(['scripts/onnx-node-tests.py'] + sys.argv[1:])}`) on {machine}, {now}, "
        f"in {elapsed:.0f} s.",
        "",
        f"- Tests: `{args.data_dir}` (Debian libonnx-testdata {version}), every `test_*` directory.",
        "- Path: `backplane onnx-test DIR` = `onnx::RunNodeTest`: `ImportOnnx` (src/onnx), then the CPU",
        "  `runtime::Executor`, every `test_data_set_*` compared.",
        f"- Tolerances: `|actual - expected| <= atol + rtol |expected|` with rtol {args.rtol:g}, atol {args.atol:g}",
        "  (ONNX's backend-test defaults for f32); integer and bool outputs exactly; NaN matches NaN.",
        "- Integer- and bool-typed graph inputs (shapes, axes, indices, starts/ends, flags) are bound as",
        "  import-time constants, since Backplane ops take them as attributes; so are float inputs in a",
        "  position that defines the output shape or sampling grid (Resize's roi, scales and sizes, Upsample's",
        "  scales, OneHot's depth, Range's start/limit/delta, MelWeightMatrix's inputs) or a hyper-parameter of the catalog op (Dropout's ratio); other float inputs stay runtime inputs.",
        "- Status: *unsupported* = the importer or executor refused an op, attribute, opset or dtype",
        "  (ErrorCode NotImplemented / UnsupportedDType); *failed* = anything else (wrong values,",
        f"  other errors, timeout after {args.timeout} s).",
        "",
        "## Totals",
        "",
        "| passed | failed | unsupported | total |",
        "|---|---|---|---|",
        f"| {totals['passed']} | {totals['failed']} | {totals['unsupported']} | {len(results)} |",
        "",
        "## Most common reasons for not passing",
        "",
        "| tests | reason (node names and numbers elided) |",
        "|---|---|",
    ]
    reasons = collections.Counter(summarize_reason(r["reason"]) for r in results if r["status"] != "passed")
    for reason, n in reasons.most_common(40):
        lines.append(f"| {n} | {reason.replace('|', '/')} |")
    lines += ["", "## Per ONNX op type", "", "| op | passed | failed | unsupported | total |", "|---|---|---|---|---|"]
    for op, c in per_op.items():
        lines.append(f"| {op} | {c['passed']} | {c['failed']} | {c['unsupported']} | {sum(c.values())} |")
    lines += ["", "## Tests that do not pass", "", "| test | op | status | reason |", "|---|---|---|---|"]
    for r in sorted(results, key=lambda r: r["test"]):
        if r["status"] == "passed":
            continue
        reason = r["reason"].replace("|", "/").replace("\n", " ")
        lines.append(f"| {r['test']} | {r['op']} | {r['status']} | {reason} |")
    write_atomically(path, "\n".join(lines) + "\n")


def write_atomically(path, text):
    """Temp file + rename: an interrupted run leaves the previous file intact."""
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=DEFAULT_DATA)
    p.add_argument("--backplane", default=os.path.join(ROOT, "build", "backplane"))
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per test")
    p.add_argument("--rtol", type=float, default=1e-3)
    p.add_argument("--atol", type=float, default=1e-5)
    p.add_argument("--filter", default="", help="only tests whose name contains this")
    p.add_argument("--json", default=os.path.join(ROOT, "build", "onnx-node-tests.json"))
    p.add_argument("--doc", default=os.path.join(ROOT, "docs", "onnx-coverage.md"))
    p.add_argument("--no-doc", action="store_true")
    p.add_argument("--floor", type=int, default=None, help="exit 1 when fewer tests pass")
    args = p.parse_args()

    if not os.path.isdir(args.data_dir):
        print(f"onnx-node-tests: {args.data_dir} not found (install libonnx-testdata); skipped", file=sys.stderr)
        return 77  # ctest's SKIP_RETURN_CODE
    dirs = sorted(os.path.join(args.data_dir, d) for d in os.listdir(args.data_dir)
                  if d.startswith("test_") and args.filter in d)
    start = datetime.datetime.now()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda d: run_one(args.backplane, d, args.rtol, args.atol, args.timeout), dirs))
    elapsed = (datetime.datetime.now() - start).total_seconds()
    attribute(results)
    totals = collections.Counter(r["status"] for r in results)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    write_atomically(args.json, json.dumps({"totals": dict(totals), "rtol": args.rtol, "atol": args.atol,
                                            "tests": results}, indent=1))
    if not args.no_doc:
        write_doc(args.doc, results, args, elapsed)
    print(f"onnx node tests: {totals['passed']} passed, {totals['failed']} failed, "
          f"{totals['unsupported']} unsupported of {len(results)} ({elapsed:.1f} s)")
    if args.floor is not None and totals["passed"] < args.floor:
        print(f"onnx-node-tests: {totals['passed']} passed, below the floor of {args.floor}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
