"""Catalog ops called from Python on the committed golden cases (tests/golden/gen_*.py: NumPy,
SciPy and PyTorch outputs), compared with the tolerance table of backplane/tolerance.hpp."""
from __future__ import annotations

import json

import numpy as np
import pytest

import backplane
from conftest import GOLDEN, array, assert_close

# Files whose cases are whole ops: {"op", "inputs", "attrs"?, "outputs" | "runs" | "output"}.
OP_CASE_FILES = ["math_ops.json", "nn_ops.json", "research_ops.json", "research_ops_sampling.json",
                 "shape_ops.json", "train_ops.json", "fft_batched.json"]


def load_cases():
    cases = []
    for name in OP_CASE_FILES:
        data = json.loads((GOLDEN / name).read_text())
        for case in data["cases"]:
            want = case.get("outputs") or case.get("runs", [])[:1] or [case["output"]]
            cases.append(pytest.param(case, want, id=f"{name}:{case['name']}"))
    return cases


CASES = load_cases()
GOLDEN_OPS = {c.values[0]["op"] for c in CASES}


@pytest.mark.parametrize("case,want", CASES)
def test_golden_case(case, want):
    inputs = [None if spec is None else array(spec) for spec in case["inputs"]]
    while inputs and inputs[-1] is None:
        inputs.pop()  # None inside the list omits that optional input
    got = backplane.op(case["op"], *inputs, num_outputs=len(want), **case.get("attrs", {}))
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) >= len(want)
    for k, spec in enumerate(want):
        want_dtype = np.dtype(np.int8) if spec["dtype"] == "i4" else array(spec).dtype
        assert got[k].dtype == want_dtype, f"output {k}: dtype {got[k].dtype}, expected {want_dtype}"
        assert_close(got[k], array(spec), spec["dtype"], scale=spec.get("mag"), what=f"{case['name']} output {k}")
