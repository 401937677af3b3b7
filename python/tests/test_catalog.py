"""Every catalog op is a Python function with its docstring; the stubs are current; every op is
exercised by a test of this suite."""
from __future__ import annotations

import inspect

import backplane
from backplane import _catalog, _stubgen
from conftest import REPO


def test_every_catalog_op_is_a_function_with_a_docstring():
    ops = _catalog.ops()
    assert len(ops) >= 250
    names = _catalog.python_names(ops)
    assert len(set(names.values())) == len(ops), "two ops share a Python name"
    for op in ops:
        fn = getattr(backplane.ops, names[op["id"]])
        assert fn.op_id == op["id"]
        assert op["summary"] in fn.__doc__ and op["id"] in fn.__doc__
        params = inspect.signature(fn).parameters
        for attr in op["attrs"]:
            assert any(p == attr["name"] or p.startswith(attr["name"] + "_") for p in params), (op["id"], attr["name"])
        domain, _, rest = op["id"].partition(".")
        if rest:
            member = rest.replace(".", "_")
            assert getattr(backplane.ops.by_domain[domain], member + ("_" if not member.isidentifier() or member in ("and", "or", "not", "lambda") else "")) is fn
            if domain not in names.values():  # a function of the same name hides the namespace
                assert getattr(backplane.ops, domain) is backplane.ops.by_domain[domain]


def test_issue_examples_resolve():
    assert backplane.ops.gelu.op_id == "activation.gelu"
    assert backplane.ops.gqa.op_id == "attention.gqa"
    assert "num_heads" in inspect.signature(backplane.ops.gqa).parameters
    assert backplane.ops.activation.gelu is backplane.ops.gelu


def test_stubs_are_generated_from_the_current_catalog():
    committed = (REPO / "python" / "backplane" / "ops.pyi").read_text()
    assert committed == _stubgen.render(), "run: python -m backplane._stubgen python/backplane/ops.pyi"


def test_every_runnable_op_is_called_by_this_suite():
    import test_ops_golden
    import test_ops_numpy
    tested = test_ops_golden.GOLDEN_OPS | test_ops_numpy.TESTED_OPS
    ops = _catalog.ops()
    canonical = {op["id"] for op in ops if not op["alias_of"] and op["runnable"]}
    missing = sorted(canonical - tested)
    assert not missing, f"{len(missing)} ops are not called from Python: {missing}"
    for op in ops:  # aliases resolve to their canonical op
        if op["alias_of"]:
            assert getattr(backplane.ops, _catalog.python_names(ops)[op["id"]]).op_id == op["id"]
