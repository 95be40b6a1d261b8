"""Every subcommand over a table of bad input: each answer is one line on stderr naming the value, exit 2, never
a traceback (a file that is a directory, binary or missing; sizes and counts out of range; a full disk).

The table covers the subcommands that exist; a subcommand that is added gets its rows here."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys

import pytest

from commlab.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad-input")
    (root / "binary.dat").write_bytes(b"\x00\x01\xff\xfe\x80 not text")
    (root / "notes.txt").write_text("my notes, not a log\n")
    (root / "folder").mkdir()
    return root


#: (argv with {dir} for the files above, words the error line must hold)
TABLE = [
    (["simulate", "ring-all-reduce", "--ranks", "0"], "got 0"),
    (["simulate", "ring-all-reduce", "--ranks", "x"], "--ranks must be a whole number >= 1, got 'x'"),
    (["simulate", "ring-all-reduce", "--ranks", "4097"], "from 1 to 4096, got 4097"),
    (["simulate", "ring-all-reduce", "--ranks", "2048"], "at most 131,072"),
    (["simulate", "foo", "--ranks", "4"], "unknown algorithm 'foo'"),
    (["simulate", "ring-all-reduce", "--ranks", "4", "--nbytes", "1e300"], "--nbytes must be at most 1 PiB"),
    (["simulate", "ring-all-reduce", "--ranks", "4", "--nbytes", "nan"], "cannot read size 'nan'"),
    (["simulate", "ring-all-reduce", "--ranks", "4", "--nbytes", "-1"], "size must not be negative, got '-1'"),
    (["cost", "all_reduce", "--nbytes", "1GB", "--ranks", "0", "--link", "nvlink4"], "got 0"),
    (["cost", "all_reduce", "--nbytes", "1GB", "--ranks", "8", "--link", "bogus"], "unknown link 'bogus'"),
    (["cost", "allsum", "--nbytes", "1GB", "--ranks", "8", "--link", "nvlink4"], "unknown collective 'allsum'"),
    (["nccl-tests", "{dir}/missing.txt"], "cannot read LOG '{dir}/missing.txt': No such file or directory"),
    (["nccl-tests", "{dir}/folder"], "cannot read LOG '{dir}/folder': Is a directory"),
    (["nccl-tests", "{dir}/binary.dat"], "no nccl-tests table rows in LOG '{dir}/binary.dat'"),
    (["nccl-tests", "{dir}/notes.txt"], "no nccl-tests table rows in LOG"),
    (["nccl-tests", "{dir}/notes.txt", "--link", "bogus"], "unknown link 'bogus'"),
    (["topo", "--from-file", "{dir}/missing.txt"], "cannot read FILE '{dir}/missing.txt'"),
    (["topo", "--from-file", "{dir}/folder"], "Is a directory"),
    (["topo", "--from-file", "{dir}/binary.dat"], "expected the text of `nvidia-smi topo -m`"),
    (["topo", "--example", "bogus"], "unknown example topology 'bogus'"),
    (["exercises", "check", "ch99.bogus", "3"], "unknown exercise 'ch99.bogus'"),
    (["exercises", "list", "--chapter", "99"], "unknown chapter '99'"),
    (["exercises", "key", "--seed", ""], "a learner's name must not be empty"),
    (["exercises", "progress", "--file", "{dir}/folder"],
     "cannot read the progress file '{dir}/folder': Is a directory"),
    (["animate", "foo"], "unknown algorithm 'foo'"),
    (["animate", "ring-all-reduce", "--out", "/nonexistent/x.html"], "does not exist"),
    (["animate", "ring-all-reduce", "--out", "{dir}/x.bogus"], "cannot tell what to write for --out"),
    (["book", "--manifest", "{dir}/missing.toml", "toc"], "does not exist; expected a book.toml file"),
    (["scorecard", "{dir}/missing.txt"], "cannot read LOG '{dir}/missing.txt': No such file or directory"),
    (["scorecard", "{dir}/notes.txt"], "no nccl-tests table rows in LOG"),
    (["scorecard", "--machine", "gpu=h100,bogus=1"], "unknown machine field 'bogus'; the fields are: gpu,"),
    (["plan", "--model", "70X", "--gpus", "32", "--gpu", "h100"], "unknown model '70X'; known models: 1.3B"),
    (["plan", "--model", "70B", "--gpus", "0", "--gpu", "h100"], "--gpus must be a whole number >= 1, got '0'"),
    (["plan", "--model", "70B", "--gpus", "32", "--gpu", "bogus"], "unknown GPU 'bogus'; known GPUs: a100"),
    (["plan", "--model", "70B", "--gpus", "32", "--gpu", "h100", "--seq", "-5"], "--seq must be a whole number"),
    (["cluster", "show", "bogus"], "unknown cluster preset 'bogus'; the presets are: dgx-h100-ndr"),
    (["cluster", "cost", "all_reduce", "--nbytes", "1G", "--preset", "dgx-h100-ndr", "--nodes", "0"],
     "connects 1 to 8192 nodes of 8 GPUs"),
    (["cluster", "cost", "all_reduce", "--nbytes", "1G", "--preset", "dgx-h100-ndr", "--nodes", "99999"],
     "got nodes='99999'"),
    (["cluster", "cost", "all_reduce", "--nbytes", "1G", "--preset", "dgx-h100-ndr", "--nodes", "2", "--algo",
      "bogus"], "unknown algorithm 'bogus'; the algorithms for all_reduce are"),
    (["cluster", "cost", "allsum", "--nbytes", "1G", "--preset", "dgx-h100-ndr", "--nodes", "2"], "got 'allsum'"),
    (["cluster", "export", "--format", "bogus", "dgx-h100-ndr"], "unknown --format 'bogus'"),
    (["cluster", "export", "--format", "astra-sim", "dgx-h100-ndr", "--out", "{dir}/notes.txt"], "notes.txt"),
    (["labs", "check", "bogus"], "unknown lab 'bogus'; expected one of: topology"),
    (["labs", "check", "--mine", "{dir}/missing"], "is not a folder"),
    (["labs", "check", "--class", "{dir}/notes.txt"], "is not a folder"),
    (["labs", "check", "p2p", "--timeout", "-1"], "--timeout must be a number of seconds > 0, got -1"),
    (["labs", "check", "p2p", "--junit", "/proc/no/such/x.xml"], "--junit '/proc/no/such/x.xml'"),
    (["labs", "check", "p2p", "--junit", "{dir}/folder"], "is a folder; give a file name"),
    (["bench", "all_reduce", "--ranks", "0"], "got 0"),
    (["bench", "all_reduce", "-b", "1G", "-e", "1K"], "must be <= max_nbytes (-e)"),
    (["bench", "all_reduce", "-e", "8q"], "-e must be a size"),
    (["bench", "all_reduce", "-g", "8"], "start N ranks with --ranks N"),
    (["bench", "all_reduce", "--timeout", "nan"], "--timeout must be a number of seconds > 0, got 'nan'"),
    (["bench", "all_reduce", "--json-out", "{dir}/folder"], "it is a directory"),
    (["bench", "all_reduce", "-J", "{dir}/out.txt"], "the file name must end in .json"),
    (["bench", "all_reduce", "--plot", "{dir}/missing/p.png"], "does not exist"),
]


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(autouse=True)
def _no_sweep(monkeypatch):
    import commlab.bench.notebook as notebook

    def refuse(*args, **kwargs):
        raise AssertionError("a sweep was started for bad input")

    monkeypatch.setattr(notebook, "run_sweep", refuse)


@pytest.mark.parametrize("argv, words", TABLE, ids=lambda v: " ".join(v) if isinstance(v, list) else None)
def test_bad_input_is_one_line_and_exit_2(files, argv, words):
    argv = [a.replace("{dir}", str(files)) for a in argv]
    code, out, err = _run(argv)  # any exception fails the test with its traceback
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and err.startswith(f"commlab {argv[0]}: error: "), err
    assert words.replace("{dir}", str(files)) in err


def test_every_subcommand_that_exists_is_in_the_table():
    from commlab.cli import build_parser

    parser = build_parser()
    names = set(parser._subparsers._group_actions[0].choices)  # the subcommands built so far
    covered = {argv[0] for argv, _ in TABLE} | {"doctor"}  # doctor takes no input to get wrong
    missing = names - covered
    assert not missing, f"add rows for {sorted(missing)} to TABLE"


def test_a_read_only_display_never_moves_the_file(files):
    code, out, err = _run(["exercises", "progress", "--file", str(files / "binary.dat")])
    assert code == 0 and err.count("\n") == 1 and "left as it is" in err
    assert (files / "binary.dat").read_bytes().startswith(b"\x00\x01")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["simulate", "ring-all-reduce", "--ranks", "8"],
                                  ["topo", "--example", "h100-sxm-8", "--json"], ["exercises", "list"]])
def test_output_to_a_full_disk_is_one_line_and_exit_2(argv):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "commlab", *argv], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == f"commlab {argv[0]}: error: cannot write the output: No space left on device\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("flag", ["--json-out", "--csv"])
def test_bench_files_on_a_full_disk_are_one_line_and_exit_2(monkeypatch, flag):
    import commlab.bench.notebook as notebook
    from commlab.bench import BenchConfig, BenchResult
    from commlab.nccl import Measure, Row

    config = BenchConfig("all_reduce", 1024, 1024)
    row = Row(1024, 256, "float", "sum", -1, Measure(10.24, 0.1, 0.1, 0), Measure(10.24, 0.1, 0.1, 0))
    result = BenchResult("all_reduce", 2, "gloo", "float", (row,), config)
    monkeypatch.setattr(notebook, "run_sweep", lambda *args, **kwargs: result)
    code, out, err = _run(["bench", "all_reduce", flag, "/dev/full"])
    assert code == 2 and err.endswith(f"error: cannot write {flag} '/dev/full': No space left on device\n")


@pytest.mark.parametrize("argv, words", [
    (["plan", "--model", "70B", "--gpus", "32", "--gpu", "h100", "--recompute", "some"],
     "commlab plan: error: argument --recompute: invalid choice: 'some'"),
    (["cluster", "export", "dgx-h100-ndr"], "commlab cluster export: error: the following arguments are required"),
    (["bench", "all_reduce", "--bogus"], "commlab: error: unrecognized arguments: --bogus"),
    (["simulate"], "commlab simulate: error: the following arguments are required: ALGO"),
])
def test_argparse_errors_are_one_line_too(argv, words):
    """argparse's own refusals (unknown flag, missing or invalid argument): one line, exit 2, no usage dump."""
    done = subprocess.run([sys.executable, "-m", "commlab", *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(words) and "usage:" not in done.stderr
