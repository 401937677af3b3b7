#!/usr/bin/env python3
"""Golden data for Quant.Quant, Dequant.Dequant and Dequant.Dequant4
(tests/cpu/reference/{quant,dequant}_test.cpp).

Run with /usr/bin/python3 from the repository root; writes tests/golden/data/quant.json,
dequant.json and dequant4.json.
- Quant: the closed form clamp(rint(x / scale) + zp, -128, 127), rint = ties to even, with the
  division rounded once in f32 (f32/f16/bf16 sources) or f64 (f64 sources). For f32 compute it is
  cross-checked against torch.quantize_per_tensor(x, scale, zp, torch.qint8).int_repr(): they must
  agree except on quotients within an ulp of a .5 tie (torch multiplies by the f32 reciprocal);
  those indices are listed in "torch_differs". Inputs include exact .5 ties (power-of-two scales).
- Dequant (int8): torch.Tensor.dequantize() of a per-tensor qint8 tensor (f32), checked against
  the closed form f32(q - zp) * f32(scale); f16/bf16 = that f32 rounded once by torch; f64 = the
  closed form (q - zp) * scale in float64.
- Dequant4 (int4, two per byte, low nibble first, signed): the same closed forms; the packed bytes
  are built here (an odd count leaves junk in the last high nibble, which must be ignored).
"""

import os

import numpy as np
import torch

from philox_golden import DTYPES, TORCH, round_to, short, write_json

HERE = os.path.dirname(os.path.abspath(__file__))


def f32(v):
    return float(np.float32(v))


def quant_expected(x, scale, zp, dtype):
    """Closed form clamp(rint(x / scale) + zp): one correctly rounded division in the compute type
    (f32 for f32/f16/bf16, f64 for f64), ties to even. Also returns the indices where
    torch.quantize_per_tensor differs (f32 compute only): torch multiplies by the rounded f32
    reciprocal 1/scale, which can move a quotient within an ulp of a .5 tie across it."""
    if dtype == "f64":
        return np.clip(np.rint(x / np.float64(f32(scale))) + zp, -128, 127).astype(int), []
    x32 = x.astype(np.float32)
    closed = np.clip(np.rint(x32 / np.float32(scale)).astype(np.float64) + zp, -128, 127)
    closed = closed.astype(int)
    got = torch.quantize_per_tensor(torch.from_numpy(x32), f32(scale), zp, torch.qint8)
    got = got.int_repr().numpy().astype(int)
    differs = np.nonzero(got != closed)[0]
    for i in differs:  # only near-ties may differ, and only by one step
        quotient = float(x32[i]) / f32(scale)
        assert abs(abs(quotient - np.floor(quotient)) - 0.5) < 1e-5, (x32[i], scale)
        assert abs(int(got[i]) - int(closed[i])) == 1
    return closed, differs.tolist()


def dequant_expected(q, scale, zp, dtype, use_torch):
    if dtype == "f64":
        return (q.astype(np.float64) - zp) * np.float64(f32(scale))
    closed = (q.astype(np.int32) - zp).astype(np.float32) * np.float32(scale)
    out = torch.from_numpy(closed)
    if use_torch:
        qt = torch._make_per_tensor_quantized_tensor(torch.from_numpy(q.astype(np.int8)),
                                                     f32(scale), zp)
        out = qt.dequantize()
        assert (out.numpy() == closed).all(), "torch dequantize disagrees with (q - zp) * s"
    return out.to(TORCH[dtype]).to(torch.float64).numpy()


def quant_cases(rng):
    # (count, scale, zero point, ties): ties = inputs (k + 1/2) * scale with a power-of-two scale.
    shapes = [(0, 0.1, 0, False), (1, 0.05, 3, False), (7, 0.0371, -5, False),
              (33, 1 / 16, 0, True), (33, 0.25, 7, True), (257, 0.013, -128, False),
              (257, 0.5, 127, True), (4099, 0.02, 10, False)]
    cases = []
    for dtype in DTYPES:
        for count, scale, zp, ties in shapes:
            if ties:
                x = (rng.integers(-127, 127, count) + 0.5) * scale
            else:
                lo, hi = (-128 - zp - 20) * f32(scale), (127 - zp + 20) * f32(scale)
                x = rng.uniform(lo, hi, count)
                if dtype == "f64":
                    x = np.round(x, 9)  # shorter JSON; still an arbitrary f64 input
            x = round_to(x, dtype)
            q, torch_differs = quant_expected(x, scale, zp, dtype)
            cases.append({"dtype": dtype, "scale": scale, "zp": zp, "x": short(x, dtype),
                          "q": q.tolist(), "torch_differs": torch_differs})
    return cases


def dequant_cases(rng, int4):
    shapes = [(0, 0.1, 0), (1, 0.5, 0), (7, 0.0371, -5), (33, 0.1, 3), (257, 0.013, -8),
              (257, 1e-3, 7), (4099, 0.02, 2)]
    if not int4:
        shapes += [(257, 0.013, -128), (257, 1e-3, 127)]
    cases = []
    for count, scale, zp in shapes:
        lo, hi = (-8, 8) if int4 else (-128, 128)
        q = rng.integers(lo, hi, count)
        case = {"scale": scale, "zp": zp, "q": q.tolist(), "want": {}}
        if int4:
            nibbles = np.concatenate([q, [0xA]]) if count % 2 else q  # junk high nibble
            nibbles = nibbles.astype(np.int64) & 0xF
            case["packed"] = (nibbles[0::2] | (nibbles[1::2] << 4)).tolist()
        for dtype in DTYPES:
            case["want"][dtype] = short(dequant_expected(q, scale, zp, dtype, not int4), dtype)
        cases.append(case)
    return cases


def main():
    rng = np.random.default_rng(31337)
    data = os.path.join(HERE, "data")
    gen = "tests/golden/gen_quant.py"
    write_json(os.path.join(data, "quant.json"), {"generator": gen, "cases": quant_cases(rng)})
    write_json(os.path.join(data, "dequant.json"),
               {"generator": gen, "cases": dequant_cases(rng, int4=False)})
    write_json(os.path.join(data, "dequant4.json"),
               {"generator": gen, "cases": dequant_cases(rng, int4=True)})


if __name__ == "__main__":
    main()
