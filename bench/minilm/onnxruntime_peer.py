#!/usr/bin/env python3
"""The onnxruntime side of `backplane bench --embed-model`: sentences/s of the exported MiniLM
(bench/minilm/export_onnx.py) at each batch x sequence shape and thread count, on fixed
pseudo-random token ids, as JSON on stdout. Same protocol as Backplane's side: one warm-up run,
then repetitions until both >= 3 runs and >= 1 s, median time.
Usage: onnxruntime_peer.py MODEL.onnx THREADS BATCH SEQ [BATCH SEQ ...]
"""
import json
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort


def main():
    path, threads = sys.argv[1], int(sys.argv[2])
    shapes = [(int(b), int(s)) for b, s in zip(sys.argv[3::2], sys.argv[4::2])]
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    rows = []
    for batch, seq in shapes:
        ids = rng.integers(1000, 30000, size=(batch, seq), dtype=np.int64)
        ids[:, 0], ids[:, -1] = 101, 102
        feed = {"input_ids": ids, "token_type_ids": np.zeros_like(ids), "attention_mask": np.ones_like(ids)}
        sess.run(None, feed)
        times, start = [], time.perf_counter()
        while len(times) < 3 or time.perf_counter() - start < 1.0:
            t0 = time.perf_counter()
            sess.run(None, feed)
            times.append(time.perf_counter() - t0)
        rows.append({"batch": batch, "seq": seq, "threads": threads,
                     "sentences_per_s": batch / statistics.median(times), "runs": len(times)})
    print(json.dumps({"peer": f"onnxruntime {ort.__version__}", "results": rows}))


if __name__ == "__main__":
    main()
