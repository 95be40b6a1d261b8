"""commlab.labs.script, the lab scripts' shared main, with commlab.launch replaced by a fake: whose code runs
(announced in the first line), which value is reported in each launch mode, the exit status from check, and a
CommlabError as one line with exit status 2."""
from __future__ import annotations

import argparse

import pytest

from commlab import launch
from commlab.errors import CommlabError
from commlab.labs import script

LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR")


def _worker(rank, n_ranks, *args):
    raise AssertionError("the fake launch never calls the worker")


class FakeLaunch:
    """Stands in for commlab.launch.main: records its call and returns ``values`` (or raises ``error``)."""

    def __init__(self, values=None, error: Exception | None = None):
        self.values, self.error, self.calls = values, error, []

    def __call__(self, fn, default_n_ranks, *args, **kwargs):
        self.calls.append((fn, default_n_ranks, args, kwargs))
        if self.error is not None:
            raise self.error
        return self.values


NOTICE = "ring_vs_tree: running the reference solution (commlab.labs.solutions.ring_vs_tree): there is no "


@pytest.fixture(autouse=True)
def no_learner_module(tmp_path, monkeypatch):
    """An empty labs/mine, and the solutions switch off: the scripts run the reference and say so."""
    monkeypatch.setenv("COMMLAB_LABS_MINE", str(tmp_path / "mine"))
    monkeypatch.delenv("COMMLAB_LAB_SOLUTIONS", raising=False)


def run(argv_args, *args, **kwargs):
    return script.run_script(argv_args[0], argv_args[1], *args, lab="ring_vs_tree", **kwargs)


@pytest.fixture
def fake(monkeypatch):
    """A fake launch without a launcher (no torchrun variables); tests set .values or .error."""
    for name in LAUNCHER_VARS + (script.N_RANKS_VAR,):
        monkeypatch.delenv(name, raising=False)
    made = FakeLaunch()
    monkeypatch.setattr(launch, "main", made)
    return made


def under_torchrun(monkeypatch, rank: int) -> None:
    monkeypatch.setattr(launch, "is_launched", lambda: True)
    monkeypatch.setenv("RANK", str(rank))


def parse(argv: list[str], default_n_ranks: int = 4, default_timeout_s: float = 120.0) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="4")
    script.add_launch_options(parser, default_n_ranks, default_timeout_s)
    return parser.parse_args(argv)


def test_launch_options_defaults_and_values():
    assert vars(parse([], 4, 300.0)) == {"size": "4", "ranks": None, "backend": "auto", "timeout": 300.0,
                                         "reference": False}
    assert parse(["--reference"]).reference
    given = parse(["--ranks", "3", "--backend", "gloo", "--timeout", "7.5"])
    assert (given.ranks, given.backend, given.timeout) == (3, "gloo", 7.5)


def test_launch_options_help_names_the_defaults(capsys):
    with pytest.raises(SystemExit):
        parse(["--help"], 2, 300.0)
    text = " ".join(capsys.readouterr().out.split())
    assert "$COMMLAB_N_RANKS or 2)" in text and "(default 300)" in text


def test_prepare_gives_the_worker_args_and_the_launch_options_pass_on(fake, capsys):
    fake.values = [10, 11, 12]
    status = run(("lab.py", parse(["--ranks", "3", "--timeout", "9"])), _worker,
                               lambda args: (int(args.size), "x"), default_n_ranks=5)
    out, err = capsys.readouterr()
    assert status == 0 and out.startswith(NOTICE) and out.count("\n") == 1 and err == ""
    (fn, default, args, kwargs), = fake.calls
    assert (fn, default, args[1:], kwargs) == (_worker, 5, (4, "x"),
                                               {"n_ranks": 3, "backend": "auto", "timeout_s": 9.0})
    assert args[0].lab == "ring_vs_tree" and not args[0].mine      # the worker is given whose code to run


def test_without_a_launcher_rank_0_is_the_first_of_the_list(fake, capsys):
    fake.values = [{"rank": 0}, None, None]
    seen = []
    status = run(("lab.py", parse([])), _worker, lambda args: (), default_n_ranks=3,
                               report=lambda value, code: seen.append(value) or f"report of {value}")
    assert status == 0 and seen == [{"rank": 0}]
    out = capsys.readouterr().out
    assert out.startswith(NOTICE) and out.endswith("\nreport of {'rank': 0}\n")


def test_under_torchrun_rank_0_reports_its_own_value_even_a_list(fake, monkeypatch, capsys):
    under_torchrun(monkeypatch, 0)
    fake.values = [{"rank": 0}, {"rank": 1}]              # rank 0's value is itself a list (the group)
    seen = []
    status = run(("lab.py", parse([])), _worker, lambda args: (), default_n_ranks=2,
                               report=lambda value, code: seen.append(value) or "group")
    out = capsys.readouterr().out
    assert status == 0 and seen == [[{"rank": 0}, {"rank": 1}]] and out.startswith(NOTICE) and out.endswith("\ngroup\n")


def test_under_torchrun_other_ranks_stay_quiet(fake, monkeypatch, capsys):
    under_torchrun(monkeypatch, 3)
    monkeypatch.setenv("LOCAL_RANK", "3")
    fake.values = "rank 3's value"
    status = run(("lab.py", parse([])), _worker, lambda args: (), default_n_ranks=4,
                               report=lambda value, code: pytest.fail(f"rank 3 reported {value!r}"))
    assert status == 0 and capsys.readouterr() == ("", "")


def test_none_from_rank_0_is_not_reported(fake, capsys):
    fake.values = [None, None]
    status = run(("lab.py", parse([])), _worker, lambda args: (), default_n_ranks=2,
                               report=lambda value, code: pytest.fail("reported None"))
    assert status == 0 and capsys.readouterr().out.startswith(NOTICE)


@pytest.mark.parametrize("values, status", [([True, True, True], 0), ([True, False, True], 1), ([False], 1)])
def test_check_sees_every_rank_without_a_launcher(fake, values, status):
    fake.values = values
    seen = []
    got = run(("lab.py", parse([])), _worker, lambda args: (), default_n_ranks=3,
                            check=lambda vs: seen.append(list(vs)) or all(vs))
    assert got == status and seen == [values]


@pytest.mark.parametrize("rank, value, status", [(0, True, 0), (0, False, 1), (2, True, 0), (2, False, 1)])
def test_check_sees_this_ranks_value_under_torchrun(fake, monkeypatch, rank, value, status):
    under_torchrun(monkeypatch, rank)
    fake.values = value
    assert run(("lab.py", parse([])), _worker, lambda args: (), default_n_ranks=4, check=all) == status


def test_a_commlab_error_from_prepare_is_one_line_and_exit_2(fake, capsys):
    def prepare(args):
        raise CommlabError(f"--size must be a multiple of 8, got {args.size!r}")

    status = run(("lab.py", parse(["--size", "6"])), _worker, prepare, default_n_ranks=2,
                               report=lambda value, code: pytest.fail("reported after an error"))
    out, err = capsys.readouterr()
    assert status == 2 and out.startswith(NOTICE) and fake.calls == []
    assert err == "lab.py: error: --size must be a multiple of 8, got '6'\n"


def test_a_commlab_error_from_the_launch_is_one_line_and_exit_2(fake, capsys):
    fake.error = CommlabError("unknown backend 'mpi'; expected one of: auto, gloo, nccl")
    status = run(("ring.py", parse(["--backend", "mpi"])), _worker, lambda args: (), default_n_ranks=2,
                               check=lambda vs: pytest.fail("checked after an error"))
    assert status == 2
    assert capsys.readouterr().err == "ring.py: error: unknown backend 'mpi'; expected one of: auto, gloo, nccl\n"


def test_other_errors_are_not_swallowed(fake):
    fake.error = RuntimeError("rank 1 failed")
    with pytest.raises(RuntimeError, match="rank 1 failed"):
        run(("lab.py", parse([])), _worker, lambda args: (), default_n_ranks=2)


def test_the_real_launch_rejects_a_bad_backend_before_starting_ranks(monkeypatch, capsys):
    for name in LAUNCHER_VARS:
        monkeypatch.delenv(name, raising=False)
    status = run(("lab.py", parse(["--backend", "mpi"])), _worker, lambda args: (), default_n_ranks=2)
    assert status == 2
    err = capsys.readouterr().err
    assert err.startswith("lab.py: error: unknown backend 'mpi'") and err.count("\n") == 1


def test_ranks_to_start_prefers_the_option_then_the_environment(monkeypatch):
    monkeypatch.delenv(script.N_RANKS_VAR, raising=False)
    assert script.ranks_to_start(None, 2) == 2
    assert script.ranks_to_start(1, 2) == 1
    monkeypatch.setenv(script.N_RANKS_VAR, "6")
    assert script.ranks_to_start(None, 2) == 6 and script.ranks_to_start(3, 2) == 3
    monkeypatch.setenv(script.N_RANKS_VAR, "four")
    with pytest.raises(CommlabError, match="COMMLAB_N_RANKS must be a whole number, got 'four'"):
        script.ranks_to_start(None, 2)


def test_a_learner_module_is_announced_checked_first_and_stops_the_script(fake, tmp_path, capsys):
    """labs/mine/ring_vs_tree.py with a tree model that uses floor(log2 N): exit 1 with the check's sentence,
    before any rank starts; the same module with the right models runs the worker with the learner's code."""
    from commlab.labs.checks.ring_vs_tree import check_models as models
    from commlab.labs.code import Code

    mine = tmp_path / "mine"
    mine.mkdir()
    right = "from commlab.labs.solutions.ring_vs_tree import *\n"
    wrong = right + ("import math\n\ndef tree_time_s(nbytes, n_ranks, alpha_s, bw_Bps):\n"
                     "    return 2 * math.floor(math.log2(n_ranks)) * (alpha_s + nbytes / bw_Bps)\n")
    (mine / "ring_vs_tree.py").write_text(wrong)
    assert run(("lab.py", parse([])), _worker, lambda args: (), default_n_ranks=2) == 1
    out = capsys.readouterr().out
    learner = Code("ring_vs_tree", mine / "ring_vs_tree.py")
    sentence = models(learner.function("ring_time_s"), learner.function("tree_time_s")).problem
    assert out.startswith("ring_vs_tree: running your code from ") and f"ring_vs_tree.models: {sentence}" in out
    assert "N=3" in sentence and fake.calls == []        # floor(log2 3) = 1: the first case not a power of 2
    (mine / "ring_vs_tree.py").write_text(right)
    fake.values = [None, None]
    assert run(("lab.py", parse([])), _worker, lambda args: (), default_n_ranks=2) == 0
    assert fake.calls[0][2][0].mine                       # the worker got the learner's code
    (mine / "ring_vs_tree.py").write_text(wrong)
    assert run(("lab.py", parse(["--reference"])), _worker, lambda args: (), default_n_ranks=2) == 0
    assert capsys.readouterr().out.splitlines()[-1].endswith("(commlab.labs.solutions.ring_vs_tree): --reference")
