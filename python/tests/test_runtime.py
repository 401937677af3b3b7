"""Threads, SIMD target and the GIL."""
from __future__ import annotations

import threading
import time

import numpy as np

import backplane


def test_thread_count_can_be_set():
    old = backplane.num_threads()
    backplane.set_num_threads(1)
    assert backplane.num_threads() == 1
    backplane.set_num_threads(0)
    assert backplane.num_threads() == old


def test_simd_target_can_be_forced_and_results_agree():
    targets = backplane.targets()
    assert targets and targets[-1] == "scalar" or "scalar" in targets
    x = np.linspace(-4, 4, 257, dtype=np.float32)
    best = backplane.ops.gelu(x)
    backplane.set_target("scalar")
    try:
        assert backplane.selected_target() == "scalar"
        ref = backplane.ops.gelu(x)
    finally:
        backplane.set_target("")
    assert backplane.selected_target() == targets[0]
    np.testing.assert_allclose(best, ref, rtol=1.3e-6, atol=1e-5)


def test_gil_is_released_while_an_op_runs():
    a = np.random.default_rng(0).standard_normal((700, 700)).astype(np.float64)
    done = threading.Event()

    def work():
        for _ in range(6):
            backplane.op("math.matmul", a, a)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    ticks = 0
    while not done.is_set():
        time.sleep(0.001)  # with the GIL held by the worker this loop could not run
        ticks += 1
    t.join()
    assert ticks >= 20, f"the main thread ran only {ticks} times while the op ran"


def test_devices_lists_cpu():
    assert backplane.devices()[0] == "cpu"
