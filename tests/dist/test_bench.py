"""commlab.bench and ``commlab bench`` on real gloo ranks: nccl-tests' sizes and bandwidths, correct
results, a table that parses back, the JSON contract, and one-line errors."""
from __future__ import annotations

import json
import sys

import pytest

from commlab import bench
from commlab.cli import main
from commlab.collectives import busbw_factor
from commlab.errors import CommlabError
from commlab.nccl import format_row, parse_log

pytestmark = [pytest.mark.usefixtures("no_child_left"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

#: nccl-tests' rule for the `size` column from the sweep size S (float, 4 bytes), written out here
#: independently: the whole-buffer collectives round S down to a multiple of 4 * N.
WHOLE_BUFFER = {"all_gather", "reduce_scatter", "all_to_all"}


def _expected_size_and_count(op: str, size: int, n_ranks: int) -> tuple[int, int]:
    if op in WHOLE_BUFFER:
        count = size // 4 // n_ranks
        return count * 4 * n_ranks, count
    return size // 4 * 4, size // 4


@pytest.mark.parametrize("op", ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                                "alltoall", "sendrecv"])
def test_a_small_sweep_follows_nccl_tests_and_is_right(op):
    result = bench.sweep(op, 8, "8K", iters=2, warmup=1, n_ranks=2, progress=False, verbose=False,
                         timeout_s=120)
    name = "all_to_all" if op == "alltoall" else op
    assert (result.op, result.n_ranks, result.backend, result.dtype) == (name, 2, "gloo", "float")
    assert [r.size_bytes for r in result.rows] == [_expected_size_and_count(name, 8 * 2**k, 2)[0]
                                                   for k in range(11)]
    assert [r.count for r in result.rows] == [_expected_size_and_count(name, 8 * 2**k, 2)[1] for k in range(11)]
    has_in_place = name not in ("all_to_all", "sendrecv")
    for row in result.rows:
        assert (row.ip is not None) == has_in_place
        for m in (row.oop, row.ip) if has_in_place else (row.oop,):
            assert m.wrong == 0
            assert m.time_us > 0
            assert m.algbw_GBps == pytest.approx(row.size_bytes / (m.time_us * 1e-6) / 1e9, rel=1e-9)
            assert m.busbw_GBps == pytest.approx(m.algbw_GBps * busbw_factor(name, 2), rel=1e-12)
    parsed = parse_log(result.table())
    assert parsed.n_ranks == 2
    assert [format_row(r) for r in parsed.rows] == [format_row(r) for r in result.rows]
    assert [(r.size_bytes, r.count, r.type, r.redop, r.root) for r in parsed.rows] == [
        (r.size_bytes, r.count, r.type, r.redop, r.root) for r in result.rows]


@pytest.mark.parametrize("dtype, redop", [("half", "prod"), ("bfloat16", "max"), ("double", "min")])
def test_other_types_and_reductions_are_exact(dtype, redop):
    result = bench.sweep("all_reduce", 64, "4K", iters=1, warmup=0, n_ranks=3, dtype=dtype, redop=redop,
                         progress=False, verbose=False, timeout_s=120)
    assert {(r.type, r.redop) for r in result.rows} == {(dtype, redop)}
    assert all(m.wrong == 0 for r in result.rows for m in (r.oop, r.ip))


def test_wrong_elements_are_counted_over_all_ranks(monkeypatch):
    from commlab.bench import colls

    real_run = colls._run

    def corrupting_run(op, inp, out, *args):
        real_run(op, inp, out, *args)
        out[:1] += 1  # one wrong element on every rank

    monkeypatch.setattr(colls, "_run", corrupting_run)  # forked ranks inherit the patch
    result = bench.sweep("all_reduce", 64, 256, iters=1, warmup=0, n_ranks=3, progress=False, verbose=False)
    assert [(r.oop.wrong, r.ip.wrong) for r in result.rows] == [(3, 3)] * 3
    assert "# Out of bounds values : 6 FAILED" in result.table()


def test_cli_prints_the_table_and_writes_the_json(tmp_path, capsys):
    path = tmp_path / "rows.json"
    assert main(["bench", "reduce_scatter", "-b", "1K", "-e", "4K", "-n", "2", "-w", "1", "--ranks", "2",
                 "--json-out", str(path)]) == 0
    out, err = capsys.readouterr()
    data = json.loads(path.read_text())
    assert set(data) == {"op", "n_ranks", "backend", "dtype", "rows"}
    assert (data["op"], data["n_ranks"], data["backend"], data["dtype"]) == ("reduce_scatter", 2, "gloo", "float")
    assert [row["size_bytes"] for row in data["rows"]] == [1024, 2048, 4096]
    assert set(data["rows"][0]) == {"size_bytes", "count", "type", "redop", "root", "oop", "ip"}
    assert set(data["rows"][0]["oop"]) == {"time_us", "algbw_GBps", "busbw_GBps", "wrong"}
    parsed = parse_log(out)
    assert [r.size_bytes for r in parsed.rows] == [1024, 2048, 4096] and parsed.n_ranks == 2


@pytest.mark.parametrize("argv, words", [
    (["all_reduce", "-b", "1G", "-e", "1K"], "must be <= max_nbytes (-e), got -b 1073741824 -e 1024"),
    (["all_reduce", "--ranks", "0"], "got 0"),
    (["allreducee"], "unknown collective for commlab bench 'allreducee'"),
    (["gather"], "unknown collective for commlab bench 'gather'"),
    (["all_reduce", "-d", "int8"], "unknown data type (-d) 'int8'"),
    (["all_reduce", "-f", "1"], "factor (-f) must be a whole number >= 2, got 1"),
    (["sendrecv", "--ranks", "1"], "sendrecv needs at least 2 ranks"),
])
def test_bad_input_exits_2_with_one_line(argv, words, capsys):
    assert main(["bench", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and words in err and err.startswith("commlab bench: error:")


def test_config_is_validated_with_the_values_in_the_message():
    assert bench.BenchConfig("alltoall", "1K", "1M").op == "all_to_all"
    assert bench.BenchConfig("all_reduce", "8", "64", factor=4).sizes_nbytes() == [8, 32]
    with pytest.raises(CommlabError, match="iters \\(-n\\) must be a whole number >= 1, got 0"):
        bench.BenchConfig("all_reduce", iters=0)
    with pytest.raises(CommlabError, match="root \\(-r\\) must be a rank from 0 to 3, got 4"):
        bench.sweep("broadcast", root=4, n_ranks=4)


@pytest.mark.gpu
def test_nccl_sweep_on_gpus_is_right():
    torch = pytest.importorskip("torch")
    n_gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n_gpus < 2:
        pytest.skip(f"needs 2 CUDA GPUs, found {n_gpus}")
    result = bench.sweep("all_reduce", "1K", "1M", iters=5, n_ranks=2, backend="nccl", progress=False,
                         verbose=False, timeout_s=300)
    assert result.backend == "nccl"
    assert all(m.wrong == 0 for r in result.rows for m in (r.oop, r.ip))


def test_cli_reports_a_failed_rank_without_the_launcher_traceback(capsys, monkeypatch):
    """A rank that fails is one clear message naming it, exit 1, not a traceback through commlab.launch."""
    import commlab.bench.notebook as notebook
    from commlab.cli import main
    from commlab.launch import RankError
    from commlab.launch.failures import RankFailure

    def fail(*args, **kwargs):
        raise RankError([RankFailure(1, "exception", "RuntimeError: boom", "Traceback: in the rank")], 2, "gloo")

    monkeypatch.setattr(notebook, "run_sweep", fail)
    code = main(["bench", "all_reduce", "-b", "8", "-e", "8", "--ranks", "2"])
    err = capsys.readouterr().err
    assert code == 1 and "rank 1" in err and "boom" in err
    assert err.startswith("commlab bench: ") and "commlab/launch" not in err
