"""nccl-tests' launch shape (-g N): the floor it sets, where it is read from, the rows the constant was chosen
on, and the rows and runs it was not."""
from __future__ import annotations

import numpy as np
import pytest

from commlab.scorecard.fixture_machines import fixture_machine
from commlab.tuner.launch import LAUNCH_US_PER_GPU, LaunchShape
from commlab.tuner.machine import parse_machine
from commlab.tuner.predict import predict
from commlab.errors import CommlabError
from commlab.nccl import nccl_tests_log, parse_log


def _log(key):
    return parse_log(nccl_tests_log(key).read_text())


def test_the_floor_is_the_larger_of_the_collective_and_the_launches():
    """Closed form: t = max(t_nccl, gpus_per_thread x launch_us), size by size."""
    m = fixture_machine(20).machine
    sizes = 2.0 ** np.arange(3, 34)
    free = predict("all_reduce", sizes, m).time_s * 1e6
    shape = LaunchShape(gpus_per_thread=12)
    floored = predict("all_reduce", sizes, m, launch=shape)
    assert np.allclose(floored.time_s * 1e6, np.maximum(free, 12 * LAUNCH_US_PER_GPU))
    assert floored.floor_bound[0] and not floored.floor_bound[-1]
    one = predict("all_reduce", sizes, m, launch=LaunchShape())          # one GPU a thread: NCCL's model as is
    assert np.allclose(one.time_s, predict("all_reduce", sizes, m).time_s)


@pytest.mark.parametrize("key, gpus", [("19", 12), ("14", 2), ("11", 1), ("12", 1), ("02", 4), ("05", 4),
                                       ("06", 2), ("07", 1), ("09", 1)])
def test_the_shape_comes_from_the_preamble_or_the_command(key, gpus):
    shape = LaunchShape.from_log(_log(key))
    assert shape is not None and shape.gpus_per_thread == gpus


def test_no_preamble_and_no_command_is_no_shape():
    log = parse_log("# nranks: 2\n# collective: all_reduce\n 8 2 float sum -1 10.0 0.0 0.0 0 10.0 0.0 0.0 0\n")
    assert LaunchShape.from_log(log) is None
    assert LaunchShape.from_command("mpirun -np 16 all_reduce_perf -b 8 -e 1G -t 2 -g 3").threads == 2
    assert LaunchShape.from_command("./all_reduce_perf --gpus 4") is None


def test_the_constant_is_chosen_on_fixture_19s_zero_byte_rows():
    """NCCL 2.5 still launched a kernel for 0 bytes: those rows are host time alone, and the scorecard never
    scores them (size > 0 only)."""
    zero = [r.oop.time_us for r in _log("19").rows if r.size_bytes == 0]
    assert len(zero) == 3
    assert LAUNCH_US_PER_GPU == pytest.approx(np.median(zero) / 12, rel=0.01)


@pytest.mark.parametrize("key", ["20", "21", "22", "14", "15", "16", "17"])
def test_the_floor_holds_on_rows_it_was_not_chosen_on(key):
    """The rows up to 4 KiB of the -g 12 runs (20-22, same machine) and the -g 2 runs (14-17, another machine
    and NCCL version): with the floor their median error is within the 25% goal (every row within 30%);
    without it, NCCL's model alone is further off on every one of these logs."""
    log = _log(key)
    rows = [r for r in log.rows if 0 < r.size_bytes <= 4096]
    m = fixture_machine(key).machine
    sizes, measured = [r.size_bytes for r in rows], np.array([r.oop.time_us for r in rows])
    floored = np.abs(predict(log.collective, sizes, m, launch=LaunchShape.from_log(log)).time_s * 1e6 / measured - 1)
    alone = np.abs(predict(log.collective, sizes, m).time_s * 1e6 / measured - 1)
    assert np.median(floored) <= 0.25 and np.all(floored <= 0.30)
    assert np.median(floored) < np.median(alone)


def test_the_floor_on_a_run_it_never_saw():
    """nccl-tests issue 123 (github.com/NVIDIA/nccl-tests/issues/123): a DGX A100, NCCL_ALGO=Ring,
    NCCL_MAX_NCHANNELS=1, 8 B-128 B all_reduce with -g N, one thread: 10, 13.76, 16.88, 20.8, 25.2, 29.5,
    33.7 us for N = 2..8. The floor (N x 4.77 us) against them: every N within 25%, the median within 15%."""
    measured = {2: 10.0, 3: 13.76, 4: 16.88, 5: 20.8, 6: 25.2, 7: 29.5, 8: 33.7}
    errors = []
    for n, t_us in measured.items():
        m = parse_machine(f"gpu=a100,gpus_per_node={n}")
        p = predict("all_reduce", [64.0], m, launch=LaunchShape(gpus_per_thread=n))
        errors.append(abs(float(p.time_s[0]) * 1e6 / t_us - 1))
    assert max(errors) <= 0.25 and np.median(errors) <= 0.15


@pytest.mark.parametrize("kwargs, words", [({"gpus_per_thread": 0}, "gpus_per_thread must be a whole number"),
                                           ({"threads": 1.5}, "threads must be a whole number"),
                                           ({"launch_us": -1.0}, "launch_us must be >= 0")])
def test_bad_shapes_are_refused(kwargs, words):
    with pytest.raises(CommlabError, match=words):
        LaunchShape(**kwargs)


def test_predict_refuses_a_launch_that_is_not_a_shape():
    with pytest.raises(CommlabError, match="launch must be a LaunchShape"):
        predict("all_reduce", [8], parse_machine("gpu=h100,gpus_per_node=8"), launch=12)
