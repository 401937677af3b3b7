#!/usr/bin/python3
"""PyTorch on the problems of `backplane bench` (src/bench/workloads*.cpp), for Backplane / PyTorch
ratios. Each row keeps the C++ row's op id, size label, shapes, dtypes, byte and FLOP counts.

Written for Debian's python3-torch 1.13 (CPU). Run it with /usr/bin/python3. See README.md.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
except ImportError as exc:
    sys.exit(f"pytorch_peer.py: cannot import torch ({exc}) with {sys.executable}.\n"
             "Run it with /usr/bin/python3 (Debian's python3-torch): /usr/bin/python3 bench/pytorch/pytorch_peer.py")

K16M = 16 << 20


def uniform(shape, seed, lo=-4.0, hi=4.0, dtype=torch.float32):
    """Seeded uniform values in [lo, hi), like Random() in src/bench/bench_data.hpp (not the same values)."""
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g, dtype=torch.float32).mul_(hi - lo).add_(lo).to(dtype)


class Row:
    def __init__(self, op, size, nbytes, flops, call, setup):
        self.op, self.size, self.bytes, self.flops, self.call, self.setup = op, size, nbytes, flops, call, setup


def binary(op, fn, name):
    def setup():
        x, z, y = uniform(K16M, 1), uniform(K16M, 2), torch.empty(K16M)
        return lambda: fn(x, z, out=y)
    return Row(op, "16M", 12.0 * K16M, 0, f"torch.{name}(x, z, out=y)", setup)


def unary(op, fn, call):
    def setup():
        x, y = uniform(K16M, 1), torch.empty(K16M)
        return lambda: fn(x, y)
    return Row(op, "16M", 8.0 * K16M, 0, call, setup)


def rows_4096(op, call, make):
    """[4096, 4096] f32, normalised over the last dimension (Rows() in workloads.cpp)."""
    def setup():
        x = uniform((4096, 4096), 1)
        g, beta = uniform(4096, 2, 0.5, 1.5), uniform(4096, 3)
        y = torch.empty(4096, 4096)
        return make(x, g, beta, y)
    return Row(op, "4096x4096", 8.0 * 4096 * 4096, 0, call, setup)


def rmsnorm(x, g, beta, y):
    def call():
        torch.mul(x, torch.rsqrt(x.pow(2).mean(-1, keepdim=True).add_(1e-6)), out=y)
        y.mul_(g)
    return call


def matmul(n):
    def setup():
        a, b, y = uniform((n, n), 1), uniform((n, n), 2), torch.empty(n, n)
        return lambda: torch.mm(a, b, out=y)
    return Row("math.matmul", f"{n}x{n}x{n}", 12.0 * n * n, 2.0 * n ** 3, "torch.mm(a, b, out=y)", setup)


def matmul_bf16(n):
    def setup():
        a = uniform((n, n), 1, -1, 1, torch.bfloat16)
        b = uniform((n, n), 2, -1, 1, torch.bfloat16)
        y = torch.empty(n, n, dtype=torch.bfloat16)
        return lambda: torch.mm(a, b, out=y)
    return Row("math.matmul", f"{n}x{n}x{n} bf16", 6.0 * n * n, 2.0 * n ** 3, "torch.mm(a, b, out=y), bf16", setup)


def attention(causal):
    """Attention() in workloads.cpp: q, k, v, o as [seq, heads * dim] f32 (Backplane's layout)."""
    seq, heads, dim = 1024, 8, 64

    def setup():
        q, k, v = (uniform((seq, heads * dim), s, -1, 1) for s in (1, 2, 3))
        o = torch.empty(seq, heads * dim)
        qh = q.view(seq, heads, dim).transpose(0, 1)  # [H, S, D] views, no copies
        kt = k.view(seq, heads, dim).permute(1, 2, 0)  # [H, D, S]
        vh = v.view(seq, heads, dim).transpose(0, 1)
        scores, probs = torch.empty(heads, seq, seq), torch.empty(heads, seq, seq)
        oh = torch.empty(heads, seq, dim)
        o_heads = o.view(seq, heads, dim).transpose(0, 1)
        scale = 1.0 / math.sqrt(dim)
        mask = torch.full((seq, seq), float("-inf")).triu_(1)  # -inf above the diagonal

        def call():
            if causal:
                torch.baddbmm(mask, qh, kt, alpha=scale, out=scores)
            else:
                torch.baddbmm(scores, qh, kt, beta=0, alpha=scale, out=scores)
            torch.softmax(scores, -1, out=probs)
            torch.bmm(probs, vh, out=oh)
            o_heads.copy_(oh)
        return call

    flops = 4.0 * heads * seq * seq * dim * (0.5 if causal else 1.0)
    name = "unfused baddbmm(q, k^T) -> softmax -> bmm(p, v)"
    if causal:
        name += ", -inf mask added (full S^2 work)"
    return Row("attention.gqa", f"8 heads, seq 1024, dim 64{', causal' if causal else ''}",
               4.0 * 4 * seq * heads * dim, flops, name, setup)


def conv2d():
    def setup():
        x = uniform((8, 64, 56, 56), 1)
        w, bias = uniform((64, 64, 3, 3), 2, -0.1, 0.1), uniform(64, 3)
        return lambda: F.conv2d(x, w, bias, padding=1)
    return Row("convolution.conv2d", "batch 8, 64->64, 56x56, 3x3, pad 1",
               4.0 * (8.0 * 64 * 56 * 56 * 2 + 64 * 64 * 9), 2.0 * 8 * 64 * 64 * 56 * 56 * 9,
               "F.conv2d(x, w, b, padding=1), NCHW", setup)


def max_pool2d():
    def setup():
        x = uniform((8, 64, 112, 112), 1)
        return lambda: F.max_pool2d(x, 3, 2)  # -> [8, 64, 55, 55]
    return Row("pooling.max_pool2d", "batch 8, 64 ch, 112x112, 3x3/2",
               4.0 * (8.0 * 64 * 112 * 112 + 8.0 * 64 * 55 * 55), 0, "F.max_pool2d(x, 3, 2), NCHW", setup)


def fft1d():
    n = 65536

    def setup():
        x = torch.complex(uniform(n, 1), uniform(n, 2))
        y = torch.empty(n, dtype=torch.complex64)
        return lambda: torch.fft.fft(x, out=y)
    return Row("physics.fft1d", "complex 65536", 16.0 * n, 5.0 * n * 16,
               "torch.fft.fft(x, out=y), complex64 (interleaved)", setup)


def cholesky():
    n = 1024

    def setup():
        m = uniform((n, n), 1, -1, 1, torch.float64)
        a = m @ m.t() + n * torch.eye(n, dtype=torch.float64)  # SPD
        l = torch.empty(n, n, dtype=torch.float64)
        return lambda: torch.linalg.cholesky(a, out=l)
    return Row("causal.cholesky", "1024x1024 f64", 16.0 * n * n, n ** 3 / 3.0, "torch.linalg.cholesky(a, out=l)", setup)


def groupnorm():
    shape = (8, 64, 112, 112)
    count = 8 * 64 * 112 * 112

    def setup():
        x, g, beta = uniform(shape, 1), uniform(64, 2, 0.5, 1.5), uniform(64, 3)
        return lambda: F.group_norm(x, 32, g, beta, 1e-5)
    return Row("math.groupnorm", "[8, 64, 112, 112], 32 groups", 8.0 * count, 0,
               "F.group_norm(x, 32, g, b, 1e-5)", setup)


def transpose():
    def setup():
        x, y = uniform((4096, 4096), 1), torch.empty(4096, 4096)
        return lambda: y.copy_(x.t())
    return Row("shape.transpose", "4096x4096", 8.0 * 4096 * 4096, 0, "y.copy_(x.t())", setup)


def all_rows():
    """In the order of Workloads() in src/bench/workloads.cpp."""
    return [
        binary("math.add", torch.add, "add"),
        binary("math.mul", torch.mul, "mul"),
        unary("activation.relu", lambda x, y: torch.clamp_min(x, 0, out=y),
              "torch.clamp_min(x, 0, out=y) (relu; torch.relu has no out=)"),
        unary("math.exp", lambda x, y: torch.exp(x, out=y), "torch.exp(x, out=y)"),
        rows_4096("math.softmax", "torch.softmax(x, -1, out=y)",
                  lambda x, g, b, y: lambda: torch.softmax(x, -1, out=y)),
        rows_4096("activation.log_softmax", "torch.log_softmax(x, -1, out=y)",
                  lambda x, g, b, y: lambda: torch.log_softmax(x, -1, out=y)),
        rows_4096("math.layernorm", "F.layer_norm(x, (4096,), g, b, 1e-5)",
                  lambda x, g, b, y: lambda: F.layer_norm(x, (4096,), g, b, 1e-5)),
        rows_4096("math.rmsnorm", "x * rsqrt(mean(x^2) + 1e-6) * g, unfused (4 ops)", rmsnorm),
        matmul(512), matmul(1024), matmul(2048),
        matmul_bf16(1024),
        attention(False), attention(True),
        conv2d(),
        max_pool2d(),
        fft1d(),
        cholesky(),
        groupnorm(),
        transpose(),
    ]


def time_call(fn, min_time, batches):
    """(median, min) of per-call seconds over >= `batches` batches and >= min_time seconds in all."""
    fn()
    fn()  # warm-up: allocation, page faults, lazy initialisation
    t0 = time.perf_counter()
    fn()
    estimate = max(time.perf_counter() - t0, 1e-9)
    calls = max(1, math.ceil(min_time / batches / estimate))
    samples, start = [], time.perf_counter()
    while len(samples) < batches or time.perf_counter() - start < min_time:
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls)
    return statistics.median(samples), min(samples)


def blas_library():
    """The BLAS/LAPACK shared objects loaded into this process (Linux only)."""
    try:
        with open("/proc/self/maps") as maps:
            libs = {line.split()[-1] for line in maps if "blas" in line.lower() or "lapack" in line.lower()}
        return ", ".join(sorted(os.path.basename(p) for p in libs if p.startswith("/"))) or "none seen"
    except OSError:
        return "unknown"


def keep_freed_memory():
    """glibc mallopt: no mmap for big blocks, no trimming, so freed blocks are reused without new page faults."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_max = -1, -4  # from <malloc.h>
        return libc.mallopt(m_mmap_max, 0) == 1 and libc.mallopt(m_trim_threshold, 2**31 - 1) == 1
    except (OSError, AttributeError):
        return False


def header(allocator):
    torch.mm(torch.ones(8, 8), torch.ones(8, 8))  # loads the BLAS library
    info = torch.__config__.parallel_info().splitlines()
    backend = next((l.split(":", 1)[1].strip() for l in info if l.startswith("ATen parallel backend")), "?")
    onednn = next((l.strip() for l in info if "MKL-DNN" in l or "oneDNN" in l), "no")
    lines = [
        f"PyTorch {torch.__version__} ({sys.executable}), parallel backend {backend}, "
        f"default threads {torch.get_num_threads()}, cores {os.cpu_count()}",
        f"MKL: {'yes' if torch.backends.mkl.is_available() else 'no'}; "
        f"oneDNN: {onednn if torch.backends.mkldnn.is_available() else 'no'}; "
        f"BLAS: {blas_library()}; OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}; "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(unset)')}",
        f"Allocator: {allocator}",
    ]
    return "\n".join(lines)


def fmt_row(r):
    gbps = f"{r['gbps']:.2f}" if r["gbps"] else "—"
    gflops = f"{r['gflops']:.1f}" if r["gflops"] else "—"
    return (f"| `{r['op']}` | {r['size']} | {r['threads']} | {r['seconds'] * 1e3:.3f} ms | {gbps} | {gflops} | "
            f"`{r['call']}` |")


def parse_threads(text):
    try:
        threads = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of integers, got {text!r}")
    if not threads or min(threads) < 1:
        raise argparse.ArgumentTypeError(f"expected thread counts >= 1, got {text!r}")
    return threads


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=parse_threads, default=[1, 2], help="thread counts, e.g. 1,2 (default 1,2)")
    p.add_argument("--min-time", type=float, default=0.5, help="seconds of timed calls per row (default 0.5)")
    p.add_argument("--batches", type=int, default=5, help="minimum number of timed batches per row (default 5)")
    p.add_argument("--op", default="", help="only rows whose op id contains this substring")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    p.add_argument("--keep-freed-memory", action="store_true",
                   help="glibc mallopt(M_MMAP_MAX=0, M_TRIM_THRESHOLD=2^31-1): outputs PyTorch allocates per call "
                        "reuse freed heap memory instead of fresh, page-faulting mmap blocks")
    p.add_argument("--list", action="store_true", help="list the rows and exit")
    args = p.parse_args()
    if args.min_time < 0 or args.batches < 1:
        p.error("--min-time must be >= 0 and --batches >= 1")

    rows = [r for r in all_rows() if args.op in r.op]
    if not rows:
        p.error(f"--op {args.op!r} matches no row; rows: {', '.join(sorted({r.op for r in all_rows()}))}")
    if args.list:
        for r in rows:
            print(f"{r.op} | {r.size} | {r.call}")
        return

    try:
        json_file = open(args.json, "w") if args.json else None  # fail before the run, not after it
    except OSError as exc:
        p.error(f"--json: {exc}")
    allocator = "glibc malloc, default settings (blocks over 32 MiB are always fresh mmap'd pages)"
    if args.keep_freed_memory:
        if not keep_freed_memory():
            sys.exit("pytorch_peer.py: --keep-freed-memory: mallopt failed (needs glibc)")
        allocator = "glibc malloc with mallopt(M_MMAP_MAX=0, M_TRIM_THRESHOLD=2^31-1) (--keep-freed-memory)"
    print(header(allocator))
    if max(args.threads) > (os.cpu_count() or 1):
        print(f"warning: more threads requested than the {os.cpu_count()} cores", file=sys.stderr)
    results = []
    with torch.inference_mode():
        for threads in args.threads:
            torch.set_num_threads(threads)
            print(f"\nThreads: {torch.get_num_threads()} (torch.set_num_threads({threads})), "
                  f"median of per-call times over >= {args.batches} batches, >= {args.min_time} s per row\n")
            print("| Op | Size | Threads | Time | GB/s | GFLOP/s | PyTorch call |")
            print("|---|---|---|---|---|---|---|")
            for row in rows:
                fn = row.setup()
                seconds, best = time_call(fn, args.min_time, args.batches)
                del fn
                r = {"op": row.op, "size": row.size, "threads": threads, "seconds": seconds,
                     "gbps": row.bytes / seconds * 1e-9, "gflops": row.flops / seconds * 1e-9, "call": row.call,
                     "min_seconds": best}
                results.append(r)
                print(fmt_row(r), flush=True)
    if json_file:
        with json_file:
            json.dump(results, json_file, indent=2)
            json_file.write("\n")


if __name__ == "__main__":
    main()
