"""The catalog as Python: op names, signatures and docstrings, from the live registry."""
from __future__ import annotations

import inspect
import keyword
from dataclasses import dataclass

from . import _backplane

_PY_TYPES = {"int": "int", "float": "float", "bool": "bool", "string": "str", "int[]": "Sequence[int] | int",
             "float[]": "Sequence[float] | float"}


@dataclass(frozen=True)
class Port:
    name: str
    optional: bool
    variadic: bool


def port(text: str) -> Port:
    variadic = text.endswith("...")
    name = text.rstrip(".")
    optional = name.endswith("?")
    name = name.rstrip("?")
    if keyword.iskeyword(name):
        name += "_"
    return Port(name, optional, variadic)


def parse_default(attr: dict):
    """The catalog's textual default as a Python value (None where it has none)."""
    if attr["required"]:
        return inspect.Parameter.empty
    text, kind = attr["default"], attr["type"]
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "bool":
            return text in ("true", "1")
        if kind == "string":
            return text
        items = [s for s in text.strip("[]").replace(" ", "").split(",") if s]
        return [int(s) for s in items] if kind == "int[]" else [float(s) for s in items]
    except ValueError:
        return None


# Where two ops share a short name, the op of the earliest domain here keeps it.
_DOMAIN_PRIORITY = ["activation", "math", "tensor", "shape", "reduction", "attention"]


def python_names(ops: list[dict]) -> dict[str, str]:
    """op id -> function name in backplane.ops: the part after the domain ('activation.gelu' ->
    'gelu'); where two ops would share it, the op of the first domain of _DOMAIN_PRIORITY keeps
    it and the others are '<domain>_<name>' ('elementwise_relu'); keywords get a '_'."""
    def short(op_id):
        return op_id.split(".", 1)[1].replace(".", "_") if "." in op_id else op_id

    def rank(op_id):
        domain = op_id.split(".", 1)[0]
        return _DOMAIN_PRIORITY.index(domain) if domain in _DOMAIN_PRIORITY else len(_DOMAIN_PRIORITY)

    owners: dict[str, list[str]] = {}
    for op in ops:
        owners.setdefault(short(op["id"]), []).append(op["id"])
    names = {}
    for op in ops:
        name = short(op["id"])
        group = owners[name]
        if len(group) > 1:
            best = min(group, key=rank)
            unique_best = sum(rank(g) == rank(best) for g in group) == 1
            if not (unique_best and op["id"] == best):
                name = op["id"].replace(".", "_")
        if keyword.iskeyword(name) or not name.isidentifier():
            name += "_"
        names[op["id"]] = name
    return names


def signature(op: dict) -> inspect.Signature:
    params = []
    seen = set()
    for text in op["inputs"]:
        p = port(text)
        if p.name in seen:
            continue
        seen.add(p.name)
        if p.variadic:
            params.append(inspect.Parameter(p.name, inspect.Parameter.VAR_POSITIONAL))
        else:
            params.append(inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                            default=None if p.optional else inspect.Parameter.empty))
    has_var = any(x.kind == inspect.Parameter.VAR_POSITIONAL for x in params)
    if op["state"] and not has_var:
        params.append(inspect.Parameter("state", inspect.Parameter.VAR_POSITIONAL))
    # Required parameters after optional ones become keyword-only defaults in Python.
    fixed, optional_seen = [], False
    for x in params:
        if x.kind == inspect.Parameter.POSITIONAL_OR_KEYWORD:
            if x.default is not inspect.Parameter.empty:
                optional_seen = True
            elif optional_seen:
                x = x.replace(default=None)
        fixed.append(x)
    params = fixed
    for attr in op["attrs"]:
        name = attr["name"] + ("_" if keyword.iskeyword(attr["name"]) else "")
        if name in seen:
            name += "_attr"
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=parse_default(attr)))
    params.append(inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    params.append(inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY, default="cpu"))
    return inspect.Signature(params)


def docstring(op: dict) -> str:
    lines = [op["summary"], "", f"Catalog op ``{op['id']}``" + (f" (alias of ``{op['alias_of']}``)" if op["alias_of"] else "") + "."]
    lines += ["", "Inputs: " + (", ".join(op["inputs"]) or "(none)"), "Outputs: " + ", ".join(op["outputs"])]
    if op["attrs"]:
        lines += ["", "Attributes:"]
        for a in op["attrs"]:
            default = "required" if a["required"] else f"default {a['default'] or chr(34) * 2}"
            lines.append(f"    {a['name']} ({a['type']}): {default}")
    lines += ["", "dtypes: " + ", ".join(op["dtypes"])]
    if op["state"]:
        lines += ["", "State (extra inputs after the inputs, extra results after the outputs): " + ", ".join(op["state"])]
    runs = op["link"] + (" -> " + ", ".join(op["methods"]) if op["methods"] else "")
    lines += ["", "Runs: " + runs]
    if not op["runnable"]:
        lines += ["", "This build has no graph lowering for it: calling it raises NotImplementedError."]
    return "\n".join(lines)


def ops() -> list[dict]:
    return list(_backplane.catalog_ops())
