"""The ``commlab`` console script.

Each subcommand lives in its own module under ``commlab.cli`` and exposes ``add_parser(subparsers)`` and
``run(args) -> int``. Subcommand modules import nothing heavy at import time (torch only inside ``run``), so
``commlab --help`` stays fast. A :class:`~commlab.errors.CommlabError` becomes one line on stderr and exit 2.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys

from commlab.errors import CommlabError

#: (subcommand, module under commlab.cli), in the order ``commlab --help`` lists them.
SUBCOMMANDS = (
    ("doctor", "doctor"),
    ("simulate", "simulate"),
    ("cost", "cost"),
    ("animate", "animate"),
    ("bench", "bench"),
    ("nccl-tests", "nccl_tests"),
    ("topo", "topo"),
    ("exercises", "exercises"),
    ("book", "book"),
    ("scorecard", "scorecard"),
    ("plan", "plan"),
    ("cluster", "cluster"),
    ("labs", "labs"),
)


#: Errors of writing the output (a full disk, a quota, a failing device): one line, exit 2, not a traceback.
_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG}


def _drop_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's own flush at exit does not fail a second time."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a file (a test's capture)


class _Parser(argparse.ArgumentParser):
    """argparse that exits with status 2 and ONE line naming the bad argument: argparse's own error() prints
    the whole usage first, which buries the reason (and a script parsing stderr gets several lines)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="commlab", description="The commlab book's tools: simulate, cost, bench, read logs.")
    from commlab import __version__

    parser.add_argument("--version", action="version", version=f"commlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f"commlab.cli.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"commlab.cli.{module_name}":
                raise
            continue  # a subcommand not built yet
        p = module.add_parser(sub)
        p.set_defaults(_run=module.run, _name=name)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "_run", None) is None:
        parser.print_help()
        return 0
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # a full disk shows here, not at exit
        return code
    except CommlabError as exc:
        print(f"commlab {args._name}: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        # a rank failed or hung (commlab.launch.RankError): its message already names the rank and carries the
        # rank's own traceback or stack, so the launcher's traceback would only bury it
        if type(exc).__name__ != "RankError":
            raise
        print(f"commlab {args._name}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `commlab ... | head`: the reader stopped reading; not an error
        sys.stderr.close()
        return 0
    except OSError as exc:
        if exc.errno not in _OUTPUT_ERRNOS:
            raise
        _drop_stdout()
        print(f"commlab {args._name}: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"commlab {args._name}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
