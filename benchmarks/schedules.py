"""Speed of the pure layer: simulating a ring all-reduce on 1024 ranks, and the cost model over 10^5 sizes.

Run: .venv/bin/python benchmarks/schedules.py   (prints times; not a test)
"""
import time

import numpy as np

from commlab import cost, schedules


def main() -> None:
    n, length = 1024, 1024 * 64
    t0 = time.perf_counter()
    schedule = schedules.build("ring-all-reduce", n)
    t1 = time.perf_counter()
    rng = np.random.default_rng(0)
    inputs = [rng.normal(size=length) for _ in range(n)]
    t2 = time.perf_counter()
    out = schedules.run(schedule, inputs, record=False).outputs
    t3 = time.perf_counter()
    assert np.allclose(out[0], np.sum(inputs, axis=0))
    print(f"ring all-reduce, N={n}, {length} elements per rank: build {t1 - t0:.2f} s, "
          f"run {t3 - t2:.2f} s ({schedule.n_steps} steps, {n * schedule.n_steps} transfers)")
    sizes = np.geomspace(1, 1e11, 100_000)
    t4 = time.perf_counter()
    for algo in cost.ALL_REDUCE_ALGOS:
        cost.all_reduce_time_s(algo, sizes, 64, 5e-6, 50e9)
    t5 = time.perf_counter()
    scalar_t0 = time.perf_counter()
    for s in sizes[:1000]:
        cost.ring_all_reduce_time_s(float(s), 64, 5e-6, 50e9)
    scalar_per_call = (time.perf_counter() - scalar_t0) / 1000
    vector_per_size = (t5 - t4) / len(cost.ALL_REDUCE_ALGOS) / len(sizes)
    print(f"cost model, {len(sizes)} sizes x {len(cost.ALL_REDUCE_ALGOS)} algorithms: {1e3 * (t5 - t4):.1f} ms; "
          f"vectorised is {scalar_per_call / vector_per_size:.0f}x faster per size than a Python loop")


if __name__ == "__main__":
    main()
