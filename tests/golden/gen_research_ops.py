#!/usr/bin/env python3
"""Golden data for the graph-level research and sampling ops (tests/runtime/research_ops_test.cpp,
tests/runtime/sampling_quant_ops_test.cpp).

Run with /usr/bin/python3 from the repository root; writes tests/golden/data/research_ops.json and
tests/golden/data/research_ops_sampling.json.

Each case is one graph node: op, attrs, inputs and expected outputs (dtype, shape, values). The
oracles are independent of the C++ code: NumPy float64 (np.roll stencils, np.fft, np.einsum,
np.linalg.cholesky, np.cov, np.unpackbits), scipy.special (rel_entr, xlogy, entr), direct O(E^2)
Hawkes formulas, and for sampling gen_sampling.py's torch/NumPy draw with philox_golden.py's
Philox4x32-10. Graph-level conventions checked here: NumPy broadcasting of the elementwise ops,
numpy.roll of the flattened tensor for vsa.permute, Laplacians of rank 1-3, batched Cholesky, and
one sampling draw per row with seed + row.
"""

import os

import numpy as np
from scipy.special import entr, rel_entr, xlogy

from gen_sampling import topk, topp
from philox_golden import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(2024)


def tensor(values, dtype="f64"):
    a = np.asarray(values)
    return {"dtype": dtype, "shape": list(a.shape), "values": a.reshape(-1).tolist()}


def case(name, op, inputs, outputs, attrs=None):
    return {"name": name, "op": op, "attrs": attrs or {}, "inputs": [tensor(*i) if isinstance(i, tuple) else tensor(i)
                                                                        for i in inputs],
            "outputs": [tensor(*o) if isinstance(o, tuple) else tensor(o) for o in outputs]}


def distribution(*shape):
    p = RNG.uniform(0.1, 1.0, shape)
    return p / p.sum(axis=-1, keepdims=True)


# ---- hawkes ----------------------------------------------------------------------------------------
def hawkes_cases():
    mu, alpha, beta, total = 0.5, 0.75, 1.5, 4.0  # exact in f32 (the kernels take f32 parameters)
    events = np.array([0.25, 1.0, 1.0, 2.5, 3.0])
    queries = np.array([[0.0, 1.0, 1.5], [2.5, 3.75, 10.0]])
    # Strictly earlier events excite (an event does not excite its own time).
    lam = mu + alpha * np.array([sum(np.exp(-beta * (q - t)) for t in events if t < q) for q in queries.ravel()])
    kernel = np.array([[alpha * np.exp(-beta * (ti - tj)) if j < i and tj < ti else 0.0
                        for j, tj in enumerate(events)] for i, ti in enumerate(events)])
    lam_i = mu + kernel.sum(axis=1)
    ll = np.log(lam_i).sum() - mu * total - alpha / beta * np.sum(1 - np.exp(-beta * (total - events)))
    hawk = {"mu": mu, "alpha": alpha, "beta": beta}
    return [
        case("hawkes_intensity_2d_queries", "hawkes.intensity", [events, queries], [lam.reshape(queries.shape)], hawk),
        case("hawkes_kernel_matrix", "hawkes.kernel_matrix", [events], [kernel], {"alpha": alpha, "beta": beta}),
        case("hawkes_log_likelihood", "hawkes.log_likelihood", [events], [np.array(ll)], dict(hawk, total_time=total)),
    ]


# ---- vsa -------------------------------------------------------------------------------------------
def vsa_cases():
    a = RNG.normal(size=(2, 3))
    b = RNG.normal(size=3)
    c = RNG.normal(size=(3, 1))
    d = RNG.normal(size=(1, 4))
    u = RNG.normal(size=7)
    v = RNG.normal(size=7)
    cos = np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v))
    return [
        case("vsa_bind_broadcast", "vsa.bind", [a, b], [a * b]),
        case("vsa_bundle_broadcast", "vsa.bundle", [c, d], [c + d]),
        case("vsa_similarity", "vsa.similarity", [u, v], [np.array(cos)]),
        case("vsa_permute_2d", "vsa.permute", [a], [np.roll(a.ravel(), 2).reshape(a.shape)], {"k": 2}),
        case("vsa_permute_negative", "vsa.permute", [u], [np.roll(u, -3)], {"k": -3}),
        case("vsa_inverse_permute", "vsa.inverse_permute", [u], [np.roll(u, -9)], {"k": 9}),
    ]


# ---- active inference ------------------------------------------------------------------------------
def active_inference_cases():
    lik = RNG.uniform(0.05, 1.0, 5)
    prior = distribution(5)
    post = distribution(5)
    qo, c = distribution(4), distribution(4)
    qs = distribution(3)
    free = np.sum(rel_entr(post, prior)) - np.sum(xlogy(post, lik))
    expected = -np.sum(xlogy(qo, c)) - np.sum(entr(qs))
    err = RNG.normal(size=(2, 3))
    prec = RNG.uniform(0.0, 2.0, size=(2, 1))
    return [
        case("belief_update", "active_inference.belief_update", [lik, prior], [lik * prior / np.sum(lik * prior)]),
        case("free_energy", "active_inference.free_energy", [lik, post, prior], [np.array(free)]),
        case("expected_free_energy", "active_inference.expected_free_energy", [qo, c, qs], [np.array(expected)]),
        case("precision_weight_broadcast", "active_inference.precision_weight", [err, prec], [err * prec]),
    ]


# ---- predictive coding -----------------------------------------------------------------------------
def predictive_coding_cases():
    w = RNG.normal(size=(3, 4))
    s = RNG.normal(size=4)
    o = RNG.normal(size=3)
    e = o - w @ s
    lr = 0.125
    return [
        case("pc_prediction", "predictive_coding.prediction", [w, s], [w @ s]),
        case("pc_prediction_error_broadcast", "predictive_coding.prediction_error", [o.reshape(3, 1), o],
             [o.reshape(3, 1) - o]),
        case("pc_update_representation", "predictive_coding.update_representation", [w, s, e], [s + lr * w.T @ e],
             {"learning_rate": lr}),
        case("pc_update_weights", "predictive_coding.update_weights", [w, s, e], [w + lr * np.outer(e, s)],
             {"learning_rate": lr}),
    ]


# ---- markov blanket --------------------------------------------------------------------------------
def blanket_labels(adjacency, internal):
    """0 internal, 2 children of internal, 1 the rest of Pearl's blanket (parents, co-parents), 3 else."""
    n = len(adjacency)
    edge = lambda u, v: u != v and adjacency[u][v] != 0  # noqa: E731
    inside = set(internal)
    children = {v for u in inside for v in range(n) if edge(u, v)}
    parents = {u for v in inside for u in range(n) if edge(u, v)}
    coparents = {u for v in children for u in range(n) if edge(u, v)}
    labels = []
    for v in range(n):
        if v in inside:
            labels.append(0)
        elif v in children:
            labels.append(2)
        elif v in parents | coparents:
            labels.append(1)
        else:
            labels.append(3)
    return labels


def markov_cases():
    joint = RNG.uniform(0.0, 3.0, size=(3, 4))  # counts: normalised by the total
    p = joint / joint.sum()
    px, py = p.sum(axis=1, keepdims=True), p.sum(axis=0, keepdims=True)
    mi = np.sum(p * np.log(p / (px * py)))
    n = 6
    adjacency = np.zeros((n, n))
    for u, v in [(0, 1), (1, 2), (3, 2), (4, 0), (2, 5), (5, 5)]:
        adjacency[u, v] = 1.0
    internal = [1]
    labels = blanket_labels(adjacency, internal)
    m = RNG.uniform(0.0, 1.0, size=(n, n))
    part = np.array([0, 2, 0, 1, 2, 3])
    # Sum over the other internal nodes j != i (no self term).
    flow = lambda source: np.array([sum(m[i, j] for j in range(n) if j != i and part[j] == 0)  # noqa: E731
                                    if part[i] == source else 0.0 for i in range(n)])
    return [
        case("mutual_information", "markov_blanket.mutual_information", [joint], [np.array(mi)]),
        case("blanket_partition", "markov_blanket.partition", [adjacency, (internal, "i32")], [(labels, "i32")]),
        case("flow_active", "markov_blanket.flow_active", [m, (part, "i32")], [flow(2)]),
        case("flow_internal", "markov_blanket.flow_internal", [m, (part, "i32")], [flow(0)]),
    ]


# ---- causal ----------------------------------------------------------------------------------------
def causal_cases():
    cond, pz = distribution(2, 3, 4), distribution(3)
    pmx, pyxm, px = distribution(3, 2), distribution(3, 2, 4), distribution(3)
    frontdoor = np.einsum("xm,amy,a->xy", pmx, pyxm, px)
    t, c = RNG.normal(size=(2, 3)), RNG.normal(size=3)
    y, x, xcf = RNG.normal(size=(2, 1)), RNG.normal(size=3), RNG.normal(size=(2, 3))
    slope = 1.5
    z = RNG.normal(size=8)
    xt = 0.7 * z + RNG.normal(scale=0.3, size=8)
    yt = 2.0 * xt + RNG.normal(scale=0.3, size=8)
    iv = np.cov(z, yt)[0, 1] / np.cov(z, xt)[0, 1]
    conditionals = RNG.uniform(0.2, 1.0, 5)
    adjacency = RNG.integers(0, 2, size=(4, 4)).astype(float)
    cut = adjacency.copy()
    cut[:, [0, 2]] = 0.0
    g = RNG.normal(size=(2, 3, 3))
    spd = g @ np.swapaxes(g, 1, 2) + 3 * np.eye(3)
    return [
        case("backdoor", "causal.backdoor_adjustment", [cond, pz], [np.einsum("xzy,z->xy", cond, pz)]),
        case("frontdoor", "causal.frontdoor_adjustment", [pmx, pyxm, px], [frontdoor]),
        case("cate_broadcast", "causal.cate", [t, c], [t - c]),
        case("counterfactual_broadcast", "causal.counterfactual", [y, x, xcf], [y + slope * (xcf - x)],
             {"slope": slope}),
        case("iv_estimate", "causal.iv_estimate", [z, xt, yt], [np.array(iv)]),
        case("dag_factorization", "causal.dag_markov_factorization", [conditionals], [np.array(np.prod(conditionals))]),
        case("do_calculus", "causal.do_calculus", [adjacency, ([2, 0], "i32")], [cut]),
        case("cholesky_batched", "causal.cholesky", [spd], [np.linalg.cholesky(spd)]),
    ]


# ---- physics (periodic stencils) -------------------------------------------------------------------
def laplacian(u, h):
    return sum(np.roll(u, 1, a) + np.roll(u, -1, a) - 2 * u for a in range(u.ndim)) / h**2


def physics_cases():
    h = 0.5
    u1, u2, u3 = RNG.normal(size=7), RNG.normal(size=(3, 4)), RNG.normal(size=(2, 3, 4))
    r = lambda u, k: np.roll(u, -k)  # noqa: E731  (r(u, k)[i] = u[i + k], periodic)
    lap4 = (-r(u1, -2) + 16 * r(u1, -1) - 30 * u1 + 16 * r(u1, 1) - r(u1, 2)) / (12 * h**2)
    grad = (r(u1, 1) - r(u1, -1)) / (2 * h)
    rho = RNG.uniform(0.5, 2.0, 7)
    s = np.sqrt(rho)
    q = -0.5 * (r(s, -1) - 2 * s + r(s, 1)) / h**2 / s
    vel = RNG.normal(size=7)
    flux = rho * vel
    re, im = RNG.normal(size=6), RNG.normal(size=6)
    fwd = np.fft.fft(re + 1j * im)
    re8, im8 = RNG.normal(size=8), RNG.normal(size=8)
    inv = np.fft.ifft(re8 + 1j * im8)
    sp = {"spacing": h}
    return [
        case("laplacian_rank1", "physics.laplacian", [u1], [laplacian(u1, h)], sp),
        case("laplacian_rank2", "physics.laplacian", [u2], [laplacian(u2, h)], sp),
        case("laplacian_rank3", "physics.laplacian", [u3], [laplacian(u3, h)], sp),
        case("laplacian4", "physics.laplacian4", [u1], [lap4], sp),
        case("grad1d", "physics.grad1d", [u1], [grad], sp),
        case("divergence1d", "physics.divergence1d", [u1], [grad], sp),
        case("quantum_potential", "physics.quantum_potential", [rho], [q], sp),
        case("bohmian_velocity", "physics.bohmian_velocity", [u1], [grad], sp),
        case("madelung_continuity", "physics.madelung_continuity", [rho, vel],
             [(r(flux, 1) - r(flux, -1)) / (2 * h)], sp),
        case("fft1d_n6", "physics.fft1d", [re, im], [fwd.real, fwd.imag]),
        case("ifft1d_n8", "physics.ifft1d", [re8, im8], [inv.real, inv.imag]),
    ]


# ---- pospop ----------------------------------------------------------------------------------------
def popcounts(words, bits):
    return [int(sum((int(w) >> b) & 1 for w in words)) for b in range(bits)]


def pospop_cases():
    out = []
    for bits, dtype in [(8, "u8"), (16, "u16"), (32, "u32"), (64, "u64")]:
        words = [int(w) for w in RNG.integers(0, 2**min(bits, 53), size=6)]
        if bits == 64:
            words += [2**63, 0xFFFF << 48]  # high bits, exact as doubles
        grid = np.array(words, dtype=object).reshape(2, -1).tolist()
        out.append(case(f"count{bits}", f"pospop.count{bits}", [(grid, dtype)], [(popcounts(words, bits), "i64")]))
    text = b"Backplane\x00\xff"
    out.append(case("count_string", "pospop.count_string", [(list(text), "u8")], [(popcounts(text, 8), "i64")]))
    return out


# ---- sampling: one draw per row, row b seeded with seed + b ------------------------------------------
def sampling_cases():
    logits = np.round(RNG.normal(0.0, 2.0, size=(4, 9)) * 8) / 8  # exact in f32
    greedy = [int(np.argmax(row)) for row in logits]
    cases = [case("greedy_batched", "sampling.greedy", [(logits, "f32")], [(greedy, "i32")]),
             case("greedy_single", "sampling.greedy", [(logits[1], "f32")], [(greedy[1], "i32")])]
    for op, seed, extra, draw in [("sampling.top_k", 11, {"top_k": 4, "temperature": 1.25}, topk),
                                  ("sampling.top_p", -3, {"top_p": 0.75, "temperature": 0.8}, topp)]:
        knob = extra.get("top_k", extra.get("top_p"))
        tokens = []
        for b, row in enumerate(logits):
            token, margin = draw(row.tolist(), extra["temperature"], knob, (seed + b) % 2**64)
            assert margin > 1e-6, (op, b, margin)
            tokens.append(token)
        same_seed = [draw(row.tolist(), extra["temperature"], knob, seed % 2**64)[0] for row in logits]
        assert same_seed != tokens, "the data must tell seed + row from one seed for every row"
        attrs = dict(extra, seed=seed)
        cases.append(case(f"{op}_batched", op, [(logits, "f32")], [(tokens, "i32")], attrs))
        cases.append(case(f"{op}_single", op, [(logits[0], "f32")], [(tokens[0], "i32")], attrs))
    return cases


def main():
    research = (hawkes_cases() + vsa_cases() + active_inference_cases() + predictive_coding_cases() +
                markov_cases() + causal_cases() + physics_cases() + pospop_cases())
    write_json(os.path.join(HERE, "data", "research_ops.json"),
               {"generator": "tests/golden/gen_research_ops.py", "cases": research})
    write_json(os.path.join(HERE, "data", "research_ops_sampling.json"),
               {"generator": "tests/golden/gen_research_ops.py", "cases": sampling_cases()})


if __name__ == "__main__":
    main()
