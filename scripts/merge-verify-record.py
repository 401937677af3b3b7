#!/usr/bin/env python3
"""Merges the cells of a partial `backplane verify --op ID --record FILE` run into
docs/verify-cpu.json: cells of the same (op, method, target, dtype) are replaced, new ones added.
Targets the partial run could not run (a CPU without AVX-512) get explicit `not_run` cells for
new methods, so the matrices say "not run here" instead of pretending. The record's command and
date list every merge. Usage: merge-verify-record.py RECORD PARTIAL...
"""
import json
import os
import sys

record_path, partials = sys.argv[1], sys.argv[2:]
record = json.load(open(record_path))
key = lambda c: (c["op"], c.get("method", ""), c["target"], c["dtype"])
cells = {key(c): c for c in record["cells"]}
for path in partials:
    part = json.load(open(path))
    ran = set(part["targets"])
    for c in part["cells"]:
        cells[key(c)] = c
    for c in part["cells"]:
        for target in record["targets"]:
            k = (c["op"], c.get("method", ""), target, c["dtype"])
            if target not in ran and k not in cells:
                cells[k] = dict(c, target=target, status="not_run", max_error=0.0,
                                note=f"{target} not available on the machine of the {part['date']} run")
    record["command"] += f"; merged {path.split('/')[-1]} ({part['date']}, {part.get('cpu_model', '')}, targets {', '.join(part['targets'])})"
order = {k: i for i, k in enumerate(key(c) for c in record["cells"])}
record["cells"] = sorted(cells.values(), key=lambda c: order.get(key(c), len(order)))
tmp = f"{record_path}.tmp.{os.getpid()}"  # temp file + rename: never half a record
with open(tmp, "w") as f:
    f.write(json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
os.replace(tmp, record_path)
