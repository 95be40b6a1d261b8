"""Checks of the ring vs tree lab (labs/ring_vs_tree.ipynb): the two alpha-beta models, the crossover size,
and which algorithm is faster at a size, against :mod:`commlab.cost` on grids that include the boundaries
realistic mistakes miss (N just above a power of two, N = 2 and 3 where the ring is never slower, sizes just
below and above S*, a tie).
"""
from __future__ import annotations

import math

import numpy as np

from commlab import cost, units
from commlab.labs.checking import Outcome
from commlab.labs.checks import call

MODEL_HINTS = {"ring_time_s": "2(N-1) steps of alpha + S/(N B)",
               "tree_time_s": "2D steps of alpha + S/B with D = ceil(log2 N): for N = 5, D = 3"}
#: N from 2 to 1024: the small N where the ring is never slower, and N just above a power of two (5, 9, 1000)
#: where floor(log2 N) and ceil(log2 N) differ.
N_RANKS = (2, 3, 4, 5, 7, 8, 9, 16, 64, 1000, 1024)
LINKS = ((1e-6, 1e9), (5e-6, 50e9), (3e-4, 5e8))
SIZES = np.array([0.0, 1.0, 1e3, 1e6, 1e9])


def _case(n: int, alpha_s: float, bw_Bps: float) -> str:
    return f"N={n}, alpha={units.format_time(alpha_s)}, B={units.format_bandwidth(bw_Bps)}"


def check_models(ring_time_s, tree_time_s, n_ranks=N_RANKS, links=LINKS, sizes=SIZES) -> Outcome:
    """Both models agree with commlab.cost for N from 2 to 1024 and sizes from 0 to 1 GB, given an array."""
    grid = np.asarray(sizes, dtype=float)
    for n in n_ranks:
        for alpha_s, bw_Bps in links:
            for name, mine, ref in (("ring_time_s", ring_time_s, cost.ring_all_reduce_time_s),
                                    ("tree_time_s", tree_time_s, cost.tree_all_reduce_time_s)):
                got, failed = call(name, mine, grid, n, alpha_s, bw_Bps,
                                   what=f"{name}(sizes, {n}, {alpha_s:g}, {bw_Bps:g})")
                if failed:
                    return failed
                got = np.asarray(got, dtype=float)
                if got.shape != grid.shape:
                    return Outcome(problem=f"{name} returned shape {got.shape} for {grid.size} sizes; compute with "
                                           "the array S (numpy operations) so that it returns one time per size")
                want = ref(grid, n, alpha_s, bw_Bps)
                bad = np.flatnonzero(~np.isclose(got, want, rtol=1e-9, atol=0))
                if bad.size:
                    i = bad[0]
                    return Outcome(problem=f"{name}(S={grid[i]:g}, N={n}, alpha={alpha_s:g}, B={bw_Bps:g}) = "
                                           f"{got[i]:.6g} s; the model gives {want[i]:.6g} s ({MODEL_HINTS[name]})")
    return Outcome(details={"cases": len(n_ranks) * len(links) * grid.size})


def check_predict_crossover_nbytes(fn, n_ranks=N_RANKS, links=LINKS) -> Outcome:
    """S* against commlab.cost.crossover_nbytes (found numerically), nan where the ring is never slower."""
    for n in n_ranks:
        for alpha_s, bw_Bps in links:
            want = cost.crossover_nbytes("ring", "tree", n, alpha_s, bw_Bps)
            got, failed = call("predict_crossover_nbytes", fn, n, alpha_s, bw_Bps)
            if failed:
                return failed
            if math.isnan(want):
                if not (isinstance(got, float) and math.isnan(got)):
                    depth = math.ceil(math.log2(n))
                    return Outcome(problem=f"{_case(n, alpha_s, bw_Bps)}: you predicted {got!r}, but the ring is never "
                                           f"slower here: its 2(N-1) = {2 * (n - 1)} latency terms are not more than "
                                           f"the tree's 2D = {2 * depth}; return float('nan')")
            elif (not isinstance(got, (int, float)) or isinstance(got, bool)
                  or not math.isclose(got, want, rel_tol=1e-5)):
                return Outcome(problem=f"{_case(n, alpha_s, bw_Bps)}: you predicted {got!r} bytes; the models meet at "
                                       f"{want:.6g} bytes ({units.format_nbytes(want)})")
    return Outcome(details={"cases": len(n_ranks) * len(links)})


def _expected(nbytes: float, n: int, alpha_s: float, bw_Bps: float) -> str:
    ring = float(cost.ring_all_reduce_time_s(nbytes, n, alpha_s, bw_Bps))
    tree = float(cost.tree_all_reduce_time_s(nbytes, n, alpha_s, bw_Bps))
    return "tree" if tree < ring else "ring"


def _faster_cases(n_ranks=N_RANKS, links=LINKS):
    """(S, N, alpha, B, why) around each crossover: 0, just below and above S*, far above; a tie at S = 0."""
    for n in n_ranks:
        for alpha_s, bw_Bps in links:
            s_star = cost.crossover_nbytes("ring", "tree", n, alpha_s, bw_Bps)
            if math.isnan(s_star):
                yield 0.0, n, alpha_s, bw_Bps, "both models take 2(N-1) alpha at S = 0: a tie goes to the ring"
                yield 1e6, n, alpha_s, bw_Bps, "with N = 2 or 3 the ring is never slower"
                continue
            yield 0.0, n, alpha_s, bw_Bps, "at S = 0 only the latency terms count, and the tree has fewer"
            yield s_star * (1 - 1e-6), n, alpha_s, bw_Bps, f"just below S* = {units.format_nbytes(s_star)}"
            yield s_star * (1 + 1e-6), n, alpha_s, bw_Bps, f"just above S* = {units.format_nbytes(s_star)}"
            yield s_star * 1e3, n, alpha_s, bw_Bps, "far above S*, the ring's smaller volume wins"


def check_faster_algorithm(fn, n_ranks=N_RANKS, links=LINKS) -> Outcome:
    """'ring' or 'tree', whichever model is faster (a tie: 'ring'), around every crossover of the grid."""
    cases = list(_faster_cases(n_ranks, links))
    for nbytes, n, alpha_s, bw_Bps, why in cases:
        want = _expected(nbytes, n, alpha_s, bw_Bps)
        got, failed = call("faster_algorithm", fn, nbytes, n, alpha_s, bw_Bps,
                           what=f"faster_algorithm({nbytes:g}, {n}, {alpha_s:g}, {bw_Bps:g})")
        if failed:
            return failed
        if got not in ("ring", "tree"):
            return Outcome(problem=f"faster_algorithm must return 'ring' or 'tree', got {got!r}")
        if got != want:
            return Outcome(problem=f"faster_algorithm(S={units.format_nbytes(nbytes)}, {_case(n, alpha_s, bw_Bps)}) "
                                   f"returned {got!r}, expected {want!r}: {why}")
    return Outcome(details={"cases": len(cases)})


# --- cases drawn when a class is graded (commlab labs check --seed): the same checks on a grid of the seed's ------

def _drawn_grid(seed: int):
    """(N, links, sizes) drawn from ``seed``: ranks from 2 to 4096, latencies of 0.5 us to 1 ms, links of 100 MB/s
    to 900 GB/s (log-uniform), sizes from 0 to 16 GiB."""
    rng = np.random.default_rng(seed)
    n_ranks = tuple(sorted({int(n) for n in rng.integers(2, 4097, size=6)} | {int(rng.integers(2, 4))}))
    links = tuple((float(10 ** rng.uniform(-6.3, -3)), float(10 ** rng.uniform(8, 11.95))) for _ in range(3))
    sizes = np.concatenate([[0.0], np.sort(np.round(10 ** rng.uniform(0, np.log10(2.0**34), size=5)))])
    return n_ranks, links, sizes


def drawn_models(ring_time_s, tree_time_s, seed: int) -> Outcome:
    n_ranks, links, sizes = _drawn_grid(seed)
    return check_models(ring_time_s, tree_time_s, n_ranks, links, sizes)


def drawn_predict_crossover_nbytes(fn, seed: int) -> Outcome:
    n_ranks, links, _ = _drawn_grid(seed)
    return check_predict_crossover_nbytes(fn, n_ranks, links)


def drawn_faster_algorithm(fn, seed: int) -> Outcome:
    n_ranks, links, _ = _drawn_grid(seed)
    return check_faster_algorithm(fn, n_ranks, links)
