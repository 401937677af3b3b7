#!/usr/bin/env python3
"""The onnxruntime side of `backplane bench --onnx-model`: runs/s of an ONNX model on the input
ONNX's backend-test runner feeds the light zoo models (arange(n) / n in f32 for each float input,
dynamic dimensions 1), as JSON on stdout. One warm-up run, then runs until both >= 3 runs and >= 1 s,
median time. Runs in the peer venv of bench/minilm/setup.sh.
Usage: onnxruntime_peer.py MODEL.onnx THREADS
"""
import json
import statistics
import sys
import time

import numpy as np
import onnxruntime as ort


def main():
    path, threads = sys.argv[1], int(sys.argv[2])
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    feed = {}
    for i in sess.get_inputs():
        shape = tuple(d if isinstance(d, int) else 1 for d in i.shape)
        n = int(np.prod(shape))
        feed[i.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
    sess.run(None, feed)
    times, start = [], time.perf_counter()
    while len(times) < 3 or time.perf_counter() - start < 1.0:
        t0 = time.perf_counter()
        sess.run(None, feed)
        times.append(time.perf_counter() - t0)
    print(json.dumps({"peer": f"onnxruntime {ort.__version__}", "runs_per_s": 1.0 / statistics.median(times),
                      "runs": len(times)}))


if __name__ == "__main__":
    main()
