"""Checks of the NCCL debug and multi-node lab (labs/nccl_debug_multinode.ipynb): the answers read from real
NCCL_DEBUG=INFO logs against :func:`commlab.nccl.read_debug_log`, the variable for each debugging goal, the
peak busbw of real nccl-tests runs against :func:`commlab.nccl.summarize`, and the verdict rule at every
cut-off (just below and just above 70 % and 100 % of the link) and on the real runs.

When a class is graded, three tasks also run on cases drawn from the seed (``drawn_<task>``): the shipped debug
logs with their hosts renamed, another NCCL version and lines left out; rows drawn from the shipped
nccl-tests runs; peaks drawn around the cut-offs of links drawn from :mod:`commlab.hardware`. Each is judged
against the same reference (:func:`commlab.nccl.read_debug_log`, :func:`commlab.nccl.summarize`,
:func:`commlab.nccl.verdict`).

``env_for_goals`` has no drawn cases: it takes no input (the eight goals are the notebook's table), so there is
nothing to draw.
"""
from __future__ import annotations

import math
import re

from commlab import hardware, nccl
from commlab.labs.checking import Outcome
from commlab.labs.checks import call

#: goal -> variable (NCCL User Guide "Environment Variables"; PyTorch's ProcessGroupNCCL and
#: torch.distributed docs). The last answer is two things, a variable and the process group's own timeout.
ANSWER_KEY = {
    "see which transports, rings and trees NCCL chose": "NCCL_DEBUG",
    "limit that log to initialisation and the network": "NCCL_DEBUG_SUBSYS",
    "force the Ring algorithm for an A/B test": "NCCL_ALGO",
    "keep NCCL's sockets off the docker0 interface": "NCCL_SOCKET_IFNAME",
    "choose which InfiniBand adapters NCCL uses": "NCCL_IB_HCA",
    "test without direct GPU-to-GPU (P2P) copies": "NCCL_P2P_DISABLE",
    "write the topology NCCL detected to a file": "NCCL_TOPO_DUMP_FILE",
    "make a hung collective fail the job instead of hanging": ("TORCH_NCCL_ASYNC_ERROR_HANDLING", "timeout"),
}
HUNG_GOAL = "make a hung collective fail the job instead of hanging"
#: The nccl-tests runs of the lab and the link each should fill (their peaks sit at 2 to 107 % of it).
RUNS = ((1, "nvlink3"), (2, "nvlink3"), (3, "nvlink4"), (7, "nvlink4"), (14, "pcie3"), (20, "nvswitch1"))
#: Fractions of the link: each cut-off (70 %, 100 %) exactly, just below and just above, and the ends.
CUT_OFFS = (0.0, 0.5, 0.6999, 0.70, 0.7001, 0.85, 0.9999, 1.0, 1.0001, 1.5)


def check_answer_log_questions(fn, paths=None) -> Outcome:
    """The four answers on the H100 two-node log (the notebook's) and on every other log the book ships."""
    logs = list(paths) if paths is not None else sorted(nccl.debug_logs(), key=lambda p: "H100_2node" not in p.name)
    for path in logs:
        problem = _log_problem(fn, path.read_text(), path.name)
        if problem:
            return Outcome(problem=problem)
    return Outcome(details={"logs": [p.name for p in logs]})


def _log_problem(fn, text: str, name: str) -> str:
    ref = nccl.read_debug_log(text)
    between = [c for c in ref.connections if {c.src, c.dst} == {0, 1}]
    got, failed = call("answer_log_questions", fn, text, what=f"answer_log_questions on {name}")
    if failed:
        return failed.problem
    if not isinstance(got, dict):
        return f"return a dict with the four answers, got {type(got).__name__}"
    version = str(got.get("nccl_version"))
    if ref.nccl_version and version.split("+")[0] != ref.nccl_version.split("+")[0]:
        return (f"{name}: nccl_version {got.get('nccl_version')!r} is not the log's: look for the line "
                "'NCCL version ...'")
    for key in ("n_channels", "n_hosts"):
        if isinstance(got.get(key), str):
            return f"{name}: {key} {got.get(key)!r} is a string: return the number itself, e.g. int(...)"
    if got.get("n_channels") != ref.n_channels:
        return (f"{name}: n_channels {got.get('n_channels')!r}: look for 'coll channels' (or the /NN of "
                "'Channel xx/NN')")
    if between and got.get("transport_0_1") not in (between[0].transport, between[0].kind):
        return (f"{name}: transport_0_1 {got.get('transport_0_1')!r}: find a 'Channel ... : 0[..] -> 1[..] via ...' "
                "line (or 1 -> 0) and read what follows 'via'")
    if got.get("n_hosts") != len(ref.hosts):
        return (f"{name}: n_hosts {got.get('n_hosts')!r}: count the different host names before ':pid:tid' on the "
                "NCCL lines")
    return ""


def check_env_for_goals(fn) -> Outcome:
    """Every goal names the right variable by its current name; the hung-collective goal also the timeout."""
    got, failed = call("env_for_goals", fn)
    if failed:
        return failed
    if not isinstance(got, dict) or set(got) != set(ANSWER_KEY):
        missing = sorted(set(ANSWER_KEY) - set(got)) if isinstance(got, dict) else list(ANSWER_KEY)
        return Outcome(problem=f"keep the eight goals as they are; missing: {missing}")
    for goal, key in ANSWER_KEY.items():
        want = key if isinstance(key, str) else key[0]
        answer = got[goal]
        names = [answer] if isinstance(answer, str) or answer is None else list(answer)
        problem = _goal_problem(goal, want, names)
        if problem:
            return Outcome(problem=problem)
    return Outcome()


def _goal_problem(goal: str, want: str, names: list) -> str:
    if not names or names == [None]:
        return f"goal {goal!r}: which variable? (replace None)"
    variable = [n for n in names if str(n).strip().lower() != "timeout"]
    if goal == HUNG_GOAL and len(variable) == len(names):
        return (f"goal {goal!r}: a variable alone is not enough: also give the process group its own `timeout` "
                "(init_process_group(..., timeout=timedelta(...))): answer a tuple (variable, \"timeout\")")
    if len(variable) != 1:
        return f"goal {goal!r}: give one variable, got {names!r}"
    try:
        var = nccl.lookup(str(variable[0]))
    except Exception:  # noqa: BLE001 - an unknown name, in words
        return f"goal {goal!r}: {variable[0]!r} is not a variable NCCL or PyTorch reads; see the table above"
    if var.name != want:
        return f"goal {goal!r}: {var.name} does this instead: {var.meaning}"
    if str(variable[0]).strip().upper() != var.name:
        return f"goal {goal!r}: {variable[0]} is the old name; current torch reads {var.name}"
    return ""


def check_peak_busbw_GBps(fn) -> Outcome:
    """The largest busbw, out of place or in place, of every run of the lab."""
    for key, _ in RUNS:
        path = nccl.nccl_tests_log(key)
        log = nccl.parse_log(path.read_text())
        want = nccl.summarize(log).peak_busbw_GBps
        got, failed = call("peak_busbw_GBps", fn, log.rows, what=f"peak_busbw_GBps on {path.name}")
        if failed:
            return failed
        if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isclose(got, want, rel_tol=1e-9):
            return Outcome(problem=f"{path.name}: your peak busbw is {got!r} GB/s, the run's is {want:g} "
                                   "(in place too?)")
    return Outcome()


def check_classify_run(fn) -> Outcome:
    """The verdict at fractions of a link just below and above each cut-off, then on the real runs."""
    link = hardware.link("nvlink4").unidir_GBps
    for fraction in CUT_OFFS:
        peak = fraction * link
        want = nccl.verdict(peak, "nvlink4").verdict
        got, failed = call("classify_run", fn, peak, link, what=f"classify_run({peak:g}, {link:g})")
        if failed:
            return failed
        if got != want:
            return Outcome(problem=f"classify_run: a peak of {peak:g} GB/s on a {link:g} GB/s link "
                                   f"({100 * fraction:g}% of it) is {want!r}, you said {got!r} (healthy from 70 % "
                                   "to 100 % inclusive, above the link over 100 %, low under 70 %)")
    for key, link_name in RUNS:
        path = nccl.nccl_tests_log(key)
        peak = nccl.summarize(nccl.parse_log(path.read_text())).peak_busbw_GBps
        expected = nccl.verdict(peak, link_name)
        got, failed = call("classify_run", fn, peak, hardware.link(link_name).unidir_GBps)
        if failed:
            return failed
        if got != expected.verdict:
            return Outcome(problem=f"{path.name}: peak {peak:g} GB/s is {expected.percent:.0f}% of {link_name}'s "
                                   f"{hardware.link(link_name).unidir_GBps:g} GB/s one way: {expected.verdict!r}, you "
                                   f"said {got!r}")
    return Outcome()


# --- cases drawn when a class is graded (commlab labs check --seed) -------------------------------------------

_HOST_PREFIX = re.compile(r"^((?:\S*\s)?)([^\s:]+)(:\d+:\d+ \[\d+\])", re.MULTILINE)


def _rng(seed: int, task: str):
    import numpy as np

    return np.random.default_rng([seed, sum(task.encode())])


def drawn_log(text: str, rng) -> str:
    """``text`` with every host renamed (consistently), the NCCL version replaced by another, and about one
    NCCL line in eight left out (never the version line), all drawn from ``rng``."""
    hosts = list(dict.fromkeys(m.group(2) for m in _HOST_PREFIX.finditer(text)))
    prefixes = ("gpu", "node", "dgx-", "hgx", "cn-", "worker")
    names: dict[str, str] = {}
    while len(names) < len(hosts):
        name = f"{prefixes[int(rng.integers(len(prefixes)))]}{int(rng.integers(1, 999)):03d}"
        if name not in names.values():
            names[hosts[len(names)]] = name
    version = f"NCCL version 2.{int(rng.integers(10, 30))}.{int(rng.integers(1, 9))}"
    lines = []
    for line in text.splitlines():
        if "NCCL version" in line:
            line = re.sub(r"NCCL version \d+\.\d+\.\d+", version, line)
        elif _HOST_PREFIX.match(line) and rng.random() < 0.125:
            continue
        lines.append(line)
    renamed = "\n".join(lines) + "\n"
    for host, name in names.items():          # everywhere the name stands alone (the lines' prefix, "on <host>")
        renamed = re.sub(rf"(?<![\w.-]){re.escape(host)}(?![\w.-])", name, renamed)
    return renamed


def drawn_answer_log_questions(fn, seed: int) -> Outcome:
    """The four answers on every shipped debug log, each rewritten by :func:`drawn_log` from ``seed``."""
    rng = _rng(seed, "answer_log_questions")
    for path in sorted(nccl.debug_logs()):
        problem = _log_problem(fn, drawn_log(path.read_text(), rng), f"{path.name} as drawn from seed {seed}")
        if problem:
            return Outcome(problem=problem)
    return Outcome()


def drawn_peak_busbw_GBps(fn, seed: int) -> Outcome:
    """The peak busbw of four shipped nccl-tests runs drawn from ``seed``, each cut to a drawn half or more of
    its rows, in a drawn order."""
    from dataclasses import replace

    rng = _rng(seed, "peak_busbw_GBps")
    paths = sorted(nccl.nccl_tests_logs())
    for i in rng.choice(len(paths), size=4, replace=False):
        log = nccl.parse_log(paths[i].read_text())
        keep = rng.permutation(len(log.rows))[:int(rng.integers((len(log.rows) + 1) // 2, len(log.rows) + 1))]
        rows = [log.rows[k] for k in keep]
        want = nccl.summarize(replace(log, rows=sorted(rows, key=lambda r: r.size_bytes))).peak_busbw_GBps
        got, failed = call("peak_busbw_GBps", fn, rows, what=f"peak_busbw_GBps on {len(rows)} rows of {paths[i].name}")
        if failed:
            return failed
        if isinstance(got, bool) or not isinstance(got, (int, float)) or not math.isclose(got, want, rel_tol=1e-9):
            return Outcome(problem=f"{len(rows)} rows of {paths[i].name} drawn from seed {seed}: your peak busbw is "
                                   f"{got!r} GB/s, theirs is {want:g} (in place too?)")
    return Outcome()


def drawn_classify_run(fn, seed: int) -> Outcome:
    """Three links drawn from commlab.hardware; on each, peaks just below and above both cut-offs (by a drawn
    0.01 % to 1 %) and two anywhere from 0 to 160 % of the link."""
    rng = _rng(seed, "classify_run")
    links = list(hardware.links())
    for i in rng.choice(len(links), size=3, replace=False):
        link = links[int(i)]
        fractions = [c * (1 + sign * 10 ** rng.uniform(-4, -2)) for c in (0.70, 1.0) for sign in (-1, 1)]
        for fraction in fractions + list(rng.uniform(0, 1.6, size=2)):
            peak = float(fraction * link.unidir_GBps)
            want = nccl.verdict(peak, link.name).verdict
            got, failed = call("classify_run", fn, peak, link.unidir_GBps,
                               what=f"classify_run({peak:g}, {link.unidir_GBps:g})")
            if failed:
                return failed
            if got != want:
                return Outcome(problem=f"classify_run: a peak of {peak:g} GB/s on {link.name} ({link.unidir_GBps:g} "
                                       f"GB/s one way, {100 * peak / link.unidir_GBps:.3g}% of it) is {want!r}, you "
                                       f"said {got!r} (healthy from 70 % to 100 % inclusive, above the link over "
                                       "100 %, low under 70 %)")
    return Outcome()
