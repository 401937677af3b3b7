"""Every catalog operation as a function: ``backplane.ops.gelu(x)``, ``backplane.ops.gqa(q, k, v,
num_heads=...)``; also by domain, ``backplane.ops.activation.gelu``. Generated at import from the
live catalog (signatures and docstrings from ``backplane op ID --describe``'s data); the stubs
in ops.pyi are generated from the same data (python -m backplane._stubgen)."""
from __future__ import annotations

import inspect
import keyword
import types

from . import _catalog
from ._op import op as _run

_OPS = _catalog.ops()
NAMES = _catalog.python_names(_OPS)  # op id -> function name


def _make(info: dict, name: str):
    sig = _catalog.signature(info)
    op_id = info["id"]
    attr_names = {(a["name"] + ("_" if keyword.iskeyword(a["name"]) else "")): a["name"] for a in info["attrs"]}
    ports = [p for p in sig.parameters.values()
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)]

    def fn(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        inputs = []
        for p in ports:
            value = bound.arguments.get(p.name, None)
            if p.kind == inspect.Parameter.VAR_POSITIONAL:
                inputs.extend(value or ())
            else:
                inputs.append(value)
        while inputs and inputs[-1] is None:
            inputs.pop()  # omitted trailing optional inputs; None inside omits that one
        attrs = {attr_names[k]: v for k, v in bound.arguments.items() if k in attr_names}
        return _run(op_id, *inputs, out=bound.arguments.get("out"), device=bound.arguments.get("device", "cpu"),
                    **attrs)

    fn.__name__ = fn.__qualname__ = name
    fn.__module__ = __name__
    fn.__signature__ = sig
    fn.__doc__ = _catalog.docstring(info)
    fn.op_id = op_id
    return fn


_domains: dict[str, types.SimpleNamespace] = {}
for _info in _OPS:
    _fn = _make(_info, NAMES[_info["id"]])
    globals()[NAMES[_info["id"]]] = _fn
    _domain, _, _rest = _info["id"].partition(".")
    _ns = _domains.setdefault(_domain, types.SimpleNamespace())
    _member = _rest.replace(".", "_") or _domain
    if keyword.iskeyword(_member):
        _member += "_"
    setattr(_ns, _member, _fn)
# Every domain's namespace; also an attribute unless a function has the same name
# (masking.causal is `causal`, so the causal domain is by_domain["causal"]).
by_domain = dict(_domains)
for _domain, _ns in _domains.items():
    if _domain not in globals():
        globals()[_domain] = _ns

__all__ = sorted(NAMES.values())
del _info, _fn, _domain, _rest, _ns, _member
