"""The cases ``commlab labs check`` draws from ``--seed`` (a check module's ``drawn_<task>``) for the p2p,
collectives, ddp_overlap, nccl_debug_multinode and find_the_hang labs: the reference passes them on several
seeds, and a submission that writes out the public cases' answers (or skips the communication they would
check) passes the public check and fails the drawn one. Ranked checks run on real gloo ranks, in process (the
grader runs the same checks on the sandboxed student's functions)."""
from __future__ import annotations

import sys

import pytest

from commlab.labs import registry
from commlab.labs.checks import collectives as collectives_checks
from commlab.labs.checks import ddp_overlap as ddp_checks
from commlab.labs.checks import find_the_hang as hang_checks
from commlab.labs.checks import nccl_debug_multinode as nccl_checks
from commlab.labs.checks import p2p as p2p_checks
from commlab.labs.solutions import collectives as collectives_lab
from commlab.labs.solutions import ddp_overlap as ddp_lab
from commlab.labs.solutions import find_the_hang as hang_lab
from commlab.labs.solutions import nccl_debug_multinode as nccl_lab
from commlab.labs.solutions import p2p as p2p_lab

pytestmark = [pytest.mark.usefixtures("no_child_left"),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")]

SEEDS = (1, 2, 3, 1234, 2**31 - 1)
RANKED_SEEDS = (1, 20261201)
LABS = ("p2p", "collectives", "ddp_overlap", "nccl_debug_multinode", "find_the_hang")
#: tasks whose function takes no input: their check module says why nothing is drawn
NO_INPUT = {("collectives", "my_predictions"), ("nccl_debug_multinode", "env_for_goals")}


@pytest.mark.parametrize("lab", LABS)
def test_every_task_has_drawn_cases_or_its_check_module_says_why_not(lab):
    import importlib

    checks = importlib.import_module(f"commlab.labs.checks.{lab}")
    for task in registry.lab(lab).tasks:
        if (lab, task.name) in NO_INPUT:
            assert not hasattr(checks, f"drawn_{task.name}")
            assert f"``{task.name}`` has no drawn cases: it takes no input" in checks.__doc__
        else:
            assert callable(getattr(checks, f"drawn_{task.name}")), (lab, task.name)


# --- the reference passes its drawn cases -------------------------------------------------------------------

UNRANKED = [(ddp_checks.drawn_layers_from_model, ddp_lab.layers_from_model),
            (ddp_checks.drawn_ddp_buckets, ddp_lab.ddp_buckets),
            (nccl_checks.drawn_answer_log_questions, nccl_lab.answer_log_questions),
            (nccl_checks.drawn_peak_busbw_GBps, nccl_lab.peak_busbw_GBps),
            (nccl_checks.drawn_classify_run, nccl_lab.classify_run),
            (hang_checks.drawn_find_the_hang, hang_lab.find_the_hang)]
RANKED = [(p2p_checks.drawn_ping_pong, p2p_lab.ping_pong),
          (p2p_checks.drawn_halo_exchange_nonblocking, p2p_lab.halo_exchange_nonblocking),
          (p2p_checks.drawn_ring_exchange, p2p_lab.ring_exchange),
          (collectives_checks.drawn_run_collective, collectives_lab.run_collective),
          (collectives_checks.drawn_all_reduce_by_halves, collectives_lab.all_reduce_by_halves)]


@pytest.mark.parametrize("drawn, reference", UNRANKED, ids=lambda f: getattr(f, "__name__", ""))
def test_the_reference_passes_the_drawn_cases_on_several_seeds(drawn, reference):
    for seed in SEEDS:
        outcome = drawn(reference, seed=seed)
        assert outcome.ok, f"seed {seed}: {outcome.problem}"


@pytest.mark.parametrize("drawn, reference", RANKED, ids=lambda f: getattr(f, "__name__", ""))
def test_the_reference_passes_the_drawn_cases_on_ranks(drawn, reference):
    for seed in RANKED_SEEDS:
        outcome = drawn(reference, seed=seed)
        assert outcome.ok, f"seed {seed}: {outcome.problem}"


def test_drawn_cases_change_with_the_seed_and_repeat_for_the_same_seed():
    assert repr(hang_checks.drawn_cases(5)) == repr(hang_checks.drawn_cases(5))
    assert repr(hang_checks.drawn_cases(5)) != repr(hang_checks.drawn_cases(6))
    import numpy as np

    text = nccl_checks.nccl.debug_logs()[0].read_text()
    one, two = (nccl_checks.drawn_log(text, np.random.default_rng(s)) for s in (1, 2))
    assert one != two and "nodea" not in one and "nodea" in text


def test_the_drawn_faults_answers_by_construction_are_the_references():
    for seed in range(60):
        for what, records, want in hang_checks.drawn_cases(seed):
            assert hang_lab.find_the_hang(records) == want, (seed, what)


# --- submissions that write out the public answers ----------------------------------------------------------

def _table(pairs):
    return {repr(k): v for k, v in pairs}


def test_memorised_answers_pass_the_public_checks_and_fail_the_drawn_ones():
    from commlab import nccl

    hangs = _table((records, want) for _, records, want in hang_checks.unseen_cases())

    def find_the_hang(records):
        return hangs.get(repr(records))

    logs = {p.read_text(): nccl_lab.answer_log_questions(p.read_text()) for p in nccl.debug_logs()}

    def answer_log_questions(text):
        return logs.get(text, {})

    peaks = {}
    for key, _ in nccl_checks.RUNS:
        rows = nccl.parse_log(nccl.nccl_tests_log(key).read_text()).rows
        peaks[tuple((r.size_bytes, r.oop.time_us) for r in rows)] = nccl_lab.peak_busbw_GBps(rows)

    def peak_busbw_GBps(rows):
        return peaks.get(tuple((r.size_bytes, r.oop.time_us) for r in rows), 0.0)

    layers = {}
    for _, make in ddp_checks.LAYER_MODELS:
        model = make()
        layers[tuple(tuple(p.shape) for p in model.parameters())] = ddp_lab.layers_from_model(model, 0.010)

    def layers_from_model(model, backward_s):
        return layers.get(tuple(tuple(p.shape) for p in model.parameters()), [])

    def ddp_buckets(nbytes, bucket_cap_mb=None, ready_order=None):    # the public models' sizes, else one bucket
        known = {tuple(ddp_checks.param_nbytes(make())) for _, make, _ in ddp_checks.CASES}
        return ddp_lab.ddp_buckets(nbytes, bucket_cap_mb, ready_order) if tuple(nbytes) in known else \
            [list(range(len(nbytes)))[::-1]]

    cases = [(hang_checks.check_find_the_hang, {"live": False}, hang_checks.drawn_find_the_hang, find_the_hang),
             (nccl_checks.check_answer_log_questions, {}, nccl_checks.drawn_answer_log_questions,
              answer_log_questions),
             (nccl_checks.check_peak_busbw_GBps, {}, nccl_checks.drawn_peak_busbw_GBps, peak_busbw_GBps),
             (ddp_checks.check_layers_from_model, {}, ddp_checks.drawn_layers_from_model, layers_from_model),
             (ddp_checks.check_ddp_buckets, {"live": False}, ddp_checks.drawn_ddp_buckets, ddp_buckets)]
    for public, settings, drawn, memorised in cases:
        assert public(memorised, **settings).ok, (public.__name__, public(memorised, **settings).problem)
        for seed in SEEDS:
            assert not drawn(memorised, seed=seed).ok, (drawn.__name__, seed)


def test_a_classify_run_that_knows_only_the_public_peaks_fails_the_drawn_ones():
    from commlab import hardware, nccl

    known = {}
    link = hardware.link("nvlink4").unidir_GBps
    for fraction in nccl_checks.CUT_OFFS:
        known[(fraction * link, link)] = nccl.verdict(fraction * link, "nvlink4").verdict
    for key, name in nccl_checks.RUNS:
        peak = nccl.summarize(nccl.parse_log(nccl.nccl_tests_log(key).read_text())).peak_busbw_GBps
        known[(peak, hardware.link(name).unidir_GBps)] = nccl.verdict(peak, name).verdict

    def classify_run(peak, link):
        return known.get((peak, link), "healthy")

    assert nccl_checks.check_classify_run(classify_run).ok
    assert all(not nccl_checks.drawn_classify_run(classify_run, seed=s).ok for s in SEEDS)


# ranked submissions that skip the communication the public cases would see (module level: ranks are forked)

def ping_pong_three_times(rank, buffer, n_round_trips):
    """Three round trips whatever n_round_trips says: the public check counts the messages of 3."""
    p2p_lab.ping_pong(rank, buffer, 3)


def halo_without_messages(rank, n_ranks, to_left, to_right, from_left, from_right):
    """Writes what the public case's neighbours send (2r + 1 to the left, 2r + 2 to the right)."""
    from_left.fill_(2 * ((rank - 1) % n_ranks) + 2)
    from_right.fill_(2 * ((rank + 1) % n_ranks) + 1)


def ring_without_messages(rank, n_ranks, outgoing, incoming):
    """Writes what the public case's left neighbour sends: 10 (r - 1) + (i mod 7)."""
    import torch

    left = (rank - 1) % n_ranks
    incoming.copy_((torch.arange(incoming.numel()) % 7 + 10 * left).to(incoming.dtype))


def collective_from_the_public_inputs(op, x, rank, n_ranks, root=0):
    """The numpy reference on the public inputs (10 r + 1, ..., rank by rank), root 0: no communication."""
    import torch
    import torch.distributed as dist

    from commlab.collectives import spec

    if op == "barrier":
        dist.barrier()
        return None
    held = spec(op).reference(collectives_lab.lab_inputs(op, n_ranks, x.numel()), root=0)[rank]
    return None if held is None else torch.from_numpy(held.copy())


def halves_from_the_public_seeds(x, n_ranks):
    """The sum of every rank's public input (rank r's drawn from manual_seed(r)): no communication."""
    import torch

    total = torch.zeros_like(x)
    for r in range(n_ranks):
        total += torch.randint(-50, 50, (x.numel(),), generator=torch.Generator().manual_seed(r)).to(x.dtype)
    return total


@pytest.mark.parametrize("public, drawn, memorised", [
    (lambda fn: p2p_lab.measure_ping_pong(fn, [8, 4096], n_repeats=1), p2p_checks.drawn_ping_pong,
     ping_pong_three_times),
    (lambda fn: p2p_lab.compare_halo_exchanges([("non-blocking", fn)], 3, 4096, n_repeats=1),
     p2p_checks.drawn_halo_exchange_nonblocking, halo_without_messages),
    (lambda fn: p2p_lab.check_ring_exchange(fn, (2, 3, 4), n_elements=256), p2p_checks.drawn_ring_exchange,
     ring_without_messages),
    (lambda fn: collectives_lab.check_collectives(fn, 4, 8), collectives_checks.drawn_run_collective,
     collective_from_the_public_inputs),
    (lambda fn: collectives_lab.check_all_reduce_by_halves(fn, 4, 4096), collectives_checks.drawn_all_reduce_by_halves,
     halves_from_the_public_seeds),
], ids=["ping_pong", "halo_exchange_nonblocking", "ring_exchange", "run_collective", "all_reduce_by_halves"])
def test_ranked_code_that_skips_the_communication_passes_the_public_case_and_fails_the_drawn_one(public, drawn,
                                                                                                  memorised):
    assert public(memorised).ok, public(memorised).problem
    outcome = drawn(memorised, seed=RANKED_SEEDS[0])
    assert not outcome.ok and outcome.problem
