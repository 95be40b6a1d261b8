"""Forced NCCL settings: NCCL's list syntax, reading them from a log, and the model honouring them."""
from __future__ import annotations

import numpy as np
import pytest

from commlab.scorecard.fixture_machines import fixture_machine
from commlab.tuner.machine import parse_machine
from commlab.nccl.debuglog import forced_settings
from commlab.tuner.settings import ALGO_NAMES, PROTO_NAMES, VARIABLES, apply_forced, enabled_names
from commlab.tuner.predict import TUNED_OPS, predict
from commlab.errors import CommlabError
from commlab.nccl import nccl_tests_logs

SIZES = [8, 4096, 2**20, 2**24, 2**30]
H100 = "gpu=h100,gpus_per_node=8"


# -- NCCL's parseList --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, op, expected", [
    ("Ring", "all_reduce", {"Ring"}),
    ("ring,TREE", "broadcast", {"Ring", "Tree"}),                       # strcasecmp
    ("Ring+Tree", "all_reduce", {"Ring", "Tree"}),                      # '+' for ',' inside a description
    ("^NVLS", "all_gather", set(ALGO_NAMES) - {"NVLS"}),
    ("ring;allreduce:tree", "all_reduce", {"Tree"}),                    # the comment's example, tuning.cc:45
    ("ring;allreduce:tree", "reduce_scatter", {"Ring"}),
    ("allreduce:^Tree", "all_reduce", set(ALGO_NAMES) - {"Tree"}),
    ("^CollNet", "all_reduce", {"Tree", "Ring", "NVLS", "NVLSTree", "PAT"}),  # NCCL <= 2.12's name for both
])
def test_algo_lists_read_as_nccl_reads_them(spec, op, expected):
    assert enabled_names(spec, ALGO_NAMES, "algorithm")[op] == expected


def test_a_prefixed_list_leaves_other_functions_at_the_defaults():
    assert set(enabled_names("allreduce:LL128", PROTO_NAMES, "protocol")) == {"all_reduce"}


@pytest.mark.parametrize("spec, words", [
    ("Rings", "unknown algorithm 'Rings' in 'Rings'; NCCL accepts: Tree, Ring, CollNetDirect"),
    ("ring;tree", "every entry but the first needs a 'function:' prefix"),
    ("allgathr:ring", "unknown function 'allgathr'"),
])
def test_bad_lists_name_the_value_and_what_is_accepted(spec, words):
    with pytest.raises(CommlabError, match=words):
        enabled_names(spec, ALGO_NAMES, "algorithm")


# -- the Machine fields ------------------------------------------------------------------------------------------
def test_machine_fields_round_trip_and_are_case_insensitive():
    m = parse_machine(f"{H100},ALGO=ring+tree,Proto=^LL128")
    assert (m.algo, m.proto) == ("ring+tree", "^LL128")
    assert parse_machine(m.describe()).resolved() == m.resolved()
    assert m.enabled("all_reduce") == ({"Ring", "Tree"}, {"LL", "Simple"})
    assert parse_machine(H100).enabled("all_reduce") == (None, None)


@pytest.mark.parametrize("desc, words", [
    (f"{H100},proto=Simpel", "unknown protocol 'Simpel' in 'Simpel'; NCCL accepts: LL, LL128, Simple"),
    (f"{H100},algo=NVLS2", "unknown algorithm 'NVLS2'"),
    (f"{H100},proto=LL128,Simple", r"joins its names with '\+'.*'Simple'"),  # a comma splits the description
    (f"{H100},algo=", "leave the field out"),
])
def test_bad_fields_say_what_is_accepted(desc, words):
    with pytest.raises(CommlabError, match=words):
        parse_machine(desc)


# -- the model honours them --------------------------------------------------------------------------------------
@pytest.mark.parametrize("desc, allowed", [
    (f"{H100},algo=Ring", {("Ring", p) for p in PROTO_NAMES}),
    (f"{H100},algo=^NVLS,proto=Simple", {("Ring", "Simple"), ("Tree", "Simple")}),
    ("gpu=a100,gpus_per_node=8,nodes=4,nics_per_node=4,nic_Gbps=200,proto=LL128+Simple",
     {(a, p) for a in ("Ring", "Tree", "NVLSTree") for p in ("LL128", "Simple")}),
])
def test_only_enabled_pairs_are_candidates(desc, allowed):
    m = parse_machine(desc)
    for op in TUNED_OPS:
        p = predict(op, SIZES, m)
        assert set(p.table) <= allowed and set(zip(p.algo, p.proto)) <= allowed, op


def test_a_forced_pair_costs_what_the_free_table_says_it_costs():
    """With NCCL_ALGO=Ring NCCL_PROTO=Simple the time is that pair's line in the unrestricted table."""
    free = predict("all_reduce", SIZES, parse_machine(H100))
    forced = predict("all_reduce", SIZES, parse_machine(f"{H100},algo=Ring,proto=Simple"))
    assert forced.pairs() == ["Ring/Simple"] * len(SIZES)
    np.testing.assert_allclose(forced.time_s * 1e6, free.table[("Ring", "Simple")])
    assert forced.time_s[0] > free.time_s[0]                                      # LL wins at 8 bytes when free


def test_a_protocol_list_turns_ll128_on_outright_as_nccl_does():
    """Default LL128 (2) needs NVLink; any NCCL_PROTO list sets it to 1 or 0 (tuning.cc:446, 518-537)."""
    pcie = "gpu=a40,gpus_per_node=2"
    assert not any(p == "LL128" for _, p in predict("all_reduce", SIZES, parse_machine(pcie)).table)
    assert any(p == "LL128" for _, p in predict("all_reduce", SIZES, parse_machine(f"{pcie},proto=^LL")).table)


@pytest.mark.parametrize("desc, op", [
    ("gpu=a40,gpus_per_node=2,algo=NVLS", "all_reduce"),          # no NVSwitch: no NVLS
    (f"{H100},algo=Tree", "all_gather"),                          # all-gather runs Ring or NVLS only
])
def test_nothing_left_fails_as_nccl_fails(desc, op):
    with pytest.raises(CommlabError, match=rf"leave NCCL no algorithm/protocol for {op} .*enqueue.cc:2063"):
        predict(op, SIZES, parse_machine(desc))


# -- reading a log -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    ("mpirun -np 16 -x NCCL_ALGO=Ring -x NCCL_PROTO=Simple ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1",
     {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}),
    ("NCCL_ALGO=Tree NCCL_DEBUG=INFO ./build/all_reduce_perf -b 8 -e 128M -f 2 -g 8", {"NCCL_ALGO": "Tree"}),
    ("export NCCL_PROTO='LL128,Simple'\nexport NCCL_NVLS_ENABLE=0\n",
     {"NCCL_PROTO": "LL128,Simple", "NCCL_NVLS_ENABLE": "0"}),
    ("# command: NCCL_TREE_THRESHOLD=0 ./build/all_reduce_perf -b 8 -e 1G -f 2 -g 4", {"NCCL_TREE_THRESHOLD": "0"}),
    ("node01:2931:2931 [0] NCCL INFO NCCL_ALGO set by environment to Ring\n", {"NCCL_ALGO": "Ring"}),
    ("host:123:123 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.\n", {"NCCL_NVLS_ENABLE": "0"}),
    ("host:1:1 [0] NCCL INFO NCCL_PROTO set by environment to LL,Simple;allreduce:^LL\n",
     {"NCCL_PROTO": "LL,Simple;allreduce:^LL"}),
    ("mpiexec -n 16 -genv NCCL_ALGO Ring ./all_reduce_perf -g 1", {"NCCL_ALGO": "Ring"}),
    ('os.environ["NCCL_PROTO"] = "Simple"', {"NCCL_PROTO": "Simple"}),
    ("srun --export=ALL,NCCL_ALGO=Ring,NCCL_DEBUG=INFO ./all_reduce_perf", {"NCCL_ALGO": "Ring"}),
    ("        - name: NCCL_ALGO\n          value: \"Ring,Tree\"\n", {"NCCL_ALGO": "Ring,Tree"}),
    # the last assignment wins; an empty value or unset drops it
    ("export NCCL_ALGO=Tree\nNCCL_ALGO=Ring ./all_reduce_perf\n", {"NCCL_ALGO": "Ring"}),
    ("export NCCL_ALGO=Tree\nunset NCCL_ALGO\n", {}),
    ("NCCL_PROTO= ./all_reduce_perf", {}),
    # not assignments: forwarding the caller's value, a reference, other variables, NCCL's own failure message
    ("mpirun -x NCCL_ALGO -x NCCL_IB_HCA=mlx5 -x NCCL_P2P_DISABLE=1 ./all_reduce_perf", {}),
    ("echo $NCCL_ALGO; MY_NCCL_ALGO=Ring true", {}),
    ("NCCL WARN No algorithm/protocol available for function AllGather with datatype ncclInt8. NCCL_ALGO was "
     "set to Tree.", {}),
])
def test_forced_settings_reads_realistic_lines(text, expected):
    assert forced_settings(text) == expected


@pytest.mark.parametrize("path", nccl_tests_logs(), ids=lambda p: p.name[:2])
def test_no_shipped_log_forces_anything(path):
    """Their command lines set NCCL_P2P_DISABLE, NCCL_IB_HCA, NCCL_TOPO_FILE..., never these four."""
    settings = forced_settings(path.read_text())
    assert settings == {}
    fm = fixture_machine(path.name[:2])
    if fm.desc is not None:
        assert apply_forced(fm.machine, settings) == fm.machine


def test_apply_forced_restricts_and_the_description_wins():
    m = parse_machine(H100)
    log = forced_settings("mpirun -x NCCL_ALGO=Ring -x NCCL_PROTO=^LL128 -x NCCL_NVLS_ENABLE=0 ./all_reduce_perf")
    forced = apply_forced(m, log)
    assert (forced.algo, forced.proto, forced.nvls, forced.has_nvls) == ("Ring", "^LL128", False, False)
    mine = apply_forced(parse_machine(f"{H100},algo=Tree+Ring,nvls=1"), log)
    assert (mine.algo, mine.proto, mine.nvls) == ("Tree+Ring", "^LL128", True)


def test_nvls_off_leaves_the_ring_and_tree():
    off = apply_forced(parse_machine(H100), {"NCCL_NVLS_ENABLE": "0"})
    pairs = set(predict("all_reduce", SIZES, off).table)
    assert pairs and not any(a.startswith("NVLS") for a, _ in pairs)


@pytest.mark.parametrize("threshold, algo", [("0", "^Tree"), ("4194304", None)])
def test_old_nccls_tree_threshold_zero_turns_tree_off(threshold, algo):
    """NCCL 2.4 used Tree only up to NCCL_TREE_THRESHOLD (enqueue.cu:236); 0 means never."""
    forced = apply_forced(parse_machine(H100), {"NCCL_TREE_THRESHOLD": threshold})
    assert forced.algo == algo
    assert apply_forced(parse_machine(H100), {"NCCL_TREE_THRESHOLD": "0", "NCCL_ALGO": "Tree"}).algo == "Tree"


def test_apply_forced_errors_name_the_setting():
    with pytest.raises(CommlabError, match="the log sets NCCL_ALGO=Rong: unknown algorithm 'Rong'"):
        apply_forced(parse_machine(H100), {"NCCL_ALGO": "Rong"})
    with pytest.raises(CommlabError, match="apply_forced knows " + ", ".join(VARIABLES) + "; got NCCL_DEBUG"):
        apply_forced(parse_machine(H100), {"NCCL_DEBUG": "INFO"})


def test_a_shipped_log_with_a_forced_algorithm_changes_the_prediction():
    """Fixture 07 (8 x H100, NVLS picked at large sizes) rerun as `NCCL_ALGO=Ring ./all_reduce_perf`."""
    path = next(p for p in nccl_tests_logs() if p.name.startswith("07"))
    machine = fixture_machine("07").machine
    text = "# command: NCCL_ALGO=Ring ./build/all_reduce_perf -b 8 -e 16G -f 2 -g 8\n" + path.read_text()
    forced = apply_forced(machine, forced_settings(text))
    free_pick = predict("all_reduce", [2**30], machine).pairs()
    ring_pick = predict("all_reduce", [2**30], forced).pairs()
    assert free_pick == ["NVLS/Simple"] and ring_pick == ["Ring/Simple"]


def test_the_nccl_version_a_log_names_and_the_note_for_old_ones():
    from commlab.nccl.debuglog import nccl_version
    from commlab.scorecard.log_model import machine_for_log
    from commlab.tuner.settings import version_note
    from commlab.tuner.machine import parse_machine

    assert nccl_version("[1,0]<stdout>:ip-10-0-0-1:12:12 [0] NCCL INFO NCCL version 2.8.3+cuda11.2") == (2, 8, 3)
    assert nccl_version("# nccl-tests version 2.17.9 nccl-headers=22903 nccl-library=22903") == (2, 29, 3)
    assert nccl_version("[gdr116] tid:21762, main(), common.cu:699, NCCL version: 22602, CUDA Runtime") == (2, 26, 2)
    assert nccl_version("no version here") is None
    assert "2.8.3 predates 2.12" in version_note(nccl_version("NCCL version 2.8.3+cuda11.2"))
    assert version_note(nccl_version("NCCL version 2.18.3+cuda12.2")) == "" and version_note(nccl_version("")) == ""
    m = parse_machine("gpu=a100,gpus_per_node=8")
    same, note = machine_for_log(m, "NCCL version 2.4.8+cuda10.0\n")
    assert same == m and "2.4.8" in note
