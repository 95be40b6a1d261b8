"""Network kinds: NCCL picks with the latency a plugin reports, the time is taken with what a hop costs."""
from __future__ import annotations

import numpy as np
import pytest

from commlab.tuner import nccl_constants as K
from commlab.scorecard.fixture_machines import fixture_machine
from commlab.tuner.machine import NETS, parse_machine
from commlab.tuner.predict import nccl_tuning_table, predict
from commlab.tuner.networks import NET_TYPES
from commlab.nccl import nccl_tests_log, parse_log

P5 = parse_machine("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400,net=efa-p5,cpu=amd")


def test_every_kind_names_its_source_and_nets_keeps_the_reported_figures():
    for name, t in NET_TYPES.items():
        assert t.source and t.name == name and set(t.protocols) <= set(K.PROTOS)
        assert NETS[name] == t.reported_latency_us
    assert NETS["efa"] == NETS["efa-p5"] == 75.0 and NETS["efa-p5en"] == 35.0


def test_ncclS_table_uses_the_reported_latency_and_the_realised_one_the_hops_cost():
    """Tree LL on 2 x 8 H100 over EFA (p5), by hand from tuning.cc: 6.8 + 2 (7 x 0.6 + 1 x (5.0 + L)), with
    L = 75 us reported (platform-aws.cpp) for NCCL's pick and L = 20 us (AWS's own cost model) for the time."""
    nccl = nccl_tuning_table("all_reduce", P5)
    real = nccl_tuning_table("all_reduce", P5, realized=True)
    assert nccl[("Tree", "LL")].latency_us == pytest.approx(6.8 + 2 * (7 * 0.6 + 5.0 + 75.0))
    assert real[("Tree", "LL")].latency_us == pytest.approx(6.8 + 2 * (7 * 0.6 + 5.0 + 20.0))
    # Simple: NCCL adds the reported latency twice; the real hop adds AWS's 3 us completion instead
    assert nccl[("Tree", "Simple")].latency_us == pytest.approx(8.4 + 2 * (7 * 4.0 + 14.0 + 75.0 + 75.0))
    assert real[("Tree", "Simple")].latency_us == pytest.approx(8.4 + 2 * (7 * 4.0 + 14.0 + 20.0 + 3.0))


def test_p5_small_messages_against_the_log():
    """Nothing chosen on fixture 09: AWS's 20 us per hop puts its 8 B-1 KiB rows (65-75 us) within 15%."""
    log = parse_log(nccl_tests_log(9).read_text())
    rows = [r for r in log.rows if 0 < r.size_bytes <= 1024]
    p = predict("all_reduce", [r.size_bytes for r in rows], fixture_machine(9).machine)
    errors = np.abs(p.time_s * 1e6 / np.array([r.oop.time_us for r in rows]) - 1)
    assert np.median(errors) <= 0.15
    assert set(p.pairs()) == {"Tree/LL"}                    # NCCL's pick, made with the reported 75 us


def test_p4de_keeps_the_plugins_figure():
    """AWS's cost model has no p4d entry: net=efa times with the reported 75 us, so old descriptions predict
    what they predicted (fixture 08's 161-165 us rows against 175 us)."""
    m = fixture_machine(8).machine
    assert m.net == "efa"
    nccl = nccl_tuning_table("all_reduce", m)
    real = nccl_tuning_table("all_reduce", m, realized=True)
    assert all(nccl[k].latency_us == pytest.approx(real[k].latency_us) for k in nccl)


def test_a_description_may_give_the_hop_itself():
    m = parse_machine("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=200,net=tcpxo,net_latency_us=40")
    real = nccl_tuning_table("all_reduce", m, realized=True)
    assert real[("Tree", "LL128")].latency_us == pytest.approx(14.0 + 2 * (7 * 1.25 + 8.5 + 40.0))
    reported = nccl_tuning_table("all_reduce", m)[("Tree", "LL128")].latency_us
    assert reported == pytest.approx(14.0 + 2 * (7 * 1.25 + 8.5))


def test_tcpxo_runs_without_ll_across_nodes_only():
    """Google's NCCL profile for TCPXO: NCCL_PROTO=Simple,LL128 (tcpxo_scripts/nccl-env-profile.sh:51)."""
    two = parse_machine("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=200,net=tcpxo")
    assert all(proto != "LL" for _, proto in nccl_tuning_table("all_reduce", two))
    one = parse_machine("gpu=h100,gpus_per_node=8,net=tcpxo")
    assert ("Ring", "LL") in nccl_tuning_table("all_reduce", one)
    # the hop's real cost is no source's: chosen on a calibration run (test_scorecard redoes the choice)
    from commlab.tuner.networks import TCPXO_HOP_US

    assert NET_TYPES["tcpxo"].outside is None and NET_TYPES["tcpxo"].hop_latency_us == TCPXO_HOP_US
    assert "chosen on one real run" in NET_TYPES["tcpxo"].source
