"""Every GPU commlab knows: it parses, the model predicts with it, and its links match the data sheet it cites."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from commlab.errors import CommlabError
from commlab.tuner import nccl_constants as K
from commlab.hardware.gpus import GPUS, nvlink_gen
from commlab.tuner.machine import parse_machine
from commlab.tuner.predict import TUNED_OPS, predict

#: NVIDIA's per-link NVLink rate, both directions, GB/s, by generation: NVLink 1 20+20 (P100), NVLink 2 25+25
#: (V100), NVLink 3 and 4 25+25 over half the lanes at twice the rate (A100, H100), NVLink 5 50+50 (B200).
LINK_GBPS = {1: 40.0, 2: 50.0, 3: 50.0, 4: 50.0, 5: 100.0}
#: GA102 (sm86) has x4 NVLink 3 links: 14.0625 GB/s each way (NVIDIA Ampere GA102 whitepaper)
GA102_LINK_GBPS = 2 * 14.0625
SIZES = [8, 4096, 2**20, 2**27, 2**32]


def _cited_total_GBps(source: str) -> float:
    """The total the source cites: the first 'N GB/s' (later ones are per-direction or comparison figures)."""
    found = re.findall(r"(\d+(?:\.\d+)?) GB/s", source)
    assert found, f"the source should cite the NVLink total in GB/s: {source!r}"
    return float(found[0])


@pytest.mark.parametrize("name", list(GPUS))
def test_links_times_the_generations_rate_is_the_cited_total(name):
    gpu = GPUS[name]
    if gpu.nvlinks == 0:
        assert "no NVLink" in gpu.source and nvlink_gen(name) == 0
        return
    per_link = GA102_LINK_GBPS if gpu.compute_capability == 86 else LINK_GBPS[nvlink_gen(name)]
    assert gpu.nvlinks * per_link == pytest.approx(_cited_total_GBps(gpu.source))


@pytest.mark.parametrize("name", list(GPUS))
@pytest.mark.parametrize("shape", ["gpus_per_node=8", "gpus_per_node=2",
                                   "gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400"])
def test_every_gpu_parses_and_predicts_every_op(name, shape):
    m = parse_machine(f"gpu={name},{shape}")
    assert parse_machine(m.describe()).resolved() == m.resolved()
    for op in TUNED_OPS:
        p = predict(op, SIZES, m)
        assert np.all(np.isfinite(p.time_s)) and np.all(p.time_s > 0), (name, shape, op)
        assert np.all(np.diff(p.time_s) >= 0), (name, shape, op)       # more bytes never take less time


@pytest.mark.parametrize("name", [n for n, g in GPUS.items() if g.nvlinks and not g.nvlink_gen])
def test_a_bridge_is_off_until_asked_for(name):
    gen = nvlink_gen(name)
    plain = parse_machine(f"gpu={name},gpus_per_node=2")
    bridged = parse_machine(f"gpu={name},gpus_per_node=2,nvlink={gen}")
    assert not plain.has_nvlink and bridged.has_nvlink and not bridged.has_nvswitch
    gpu = GPUS[name]
    assert bridged.intra_total_GBps == pytest.approx(gpu.nvlinks * K.nvlink_bw_GBps(gpu.compute_capability))


def test_h800_and_a800_have_fewer_links_than_the_parts_they_come_from():
    """8 links at NCCL's own per-link figures (topo.h:22-23: SM90 20.6, SM80 20.0 GB/s)."""
    assert parse_machine("gpu=h800,gpus_per_node=8").intra_total_GBps == pytest.approx(8 * 20.6)
    assert parse_machine("gpu=a800,gpus_per_node=8").intra_total_GBps == pytest.approx(8 * 20.0)
    h800 = predict("all_reduce", [2**33], parse_machine("gpu=h800,gpus_per_node=8"))
    h100 = predict("all_reduce", [2**33], parse_machine("gpu=h100,gpus_per_node=8"))
    assert h800.time_s[0] > h100.time_s[0]


@pytest.mark.parametrize("cc, arch, speeds, nvlink_bw", [
    # compCapIndex (tuning.cc:263-266), the search's speed arrays (search.cc:1156-1160), ncclTopoNVLinkBw
    # (topo.h:274-281): sm60/61 take SM60_NVLINK_BW; sm89 is ampere with the SM80 link (only sm86 is 12.0);
    # sm103 and sm120 are >= 100, so blackwell, with the SM100 link
    (60, "volta", "volta", 18.0), (61, "volta", "volta", 18.0), (86, "ampere", "volta", 12.0),
    (89, "ampere", "volta", 20.0), (90, "hopper", "hopper", 20.6), (103, "blackwell", "blackwell", 40.1),
    (120, "blackwell", "blackwell", 40.1),
])
def test_new_compute_capabilities_fall_in_nccls_buckets(cc, arch, speeds, nvlink_bw):
    assert (K.arch_of(cc), K.speeds_arch(cc), K.nvlink_bw_GBps(cc)) == (arch, speeds, nvlink_bw)


@pytest.mark.parametrize("name", ["rtx4090", "rtx5090"])
def test_geforce_40_and_50_cards_have_no_p2p_unless_told(name):
    m = parse_machine(f"gpu={name},gpus_per_node=2")
    assert m.p2p is False and "p2p" not in m.describe()
    patched = parse_machine(f"gpu={name},gpus_per_node=2,p2p=1")       # e.g. a driver patched for P2P
    assert patched.p2p is True and "p2p=1" in patched.describe()
    assert parse_machine(patched.describe()).resolved() == patched.resolved()
    t_shm = predict("all_reduce", [2**30], m).time_s[0]
    t_p2p = predict("all_reduce", [2**30], patched).time_s[0]
    assert math.isfinite(t_shm) and t_shm != t_p2p


def test_pascal_has_no_ll128():
    """NCCL leaves LL128 off below sm70 (tuning.cc:535-536)."""
    table = predict("all_reduce", SIZES, parse_machine("gpu=p100,gpus_per_node=4")).table
    assert table and not any(p == "LL128" for _, p in table)


def test_the_planners_presets_read_the_gpu_record_and_their_servers_nics():
    """memory, BF16 peak and HBM from commlab.hardware.gpus; GPUs, NVLink fabric and NICs from fabric.nodes."""
    from commlab.fabric.nodes import node
    from commlab.hardware import link
    from commlab.hardware.gpus import gpu
    from commlab.parallelism.catalogue import gpu as preset

    for name, record, server in [("a100-40gb", "a100-40gb", "dgx-a100"), ("a100", "a100", "dgx-a100"),
                                 ("h100", "h100", "dgx-h100"), ("h800", "h800", "dgx-h100"),
                                 ("h200", "h200", "dgx-h100"), ("b200", "b200", "dgx-b200")]:
        p, r, n = preset(name), gpu(record), node(server)
        assert (p.memory_GiB, p.peak_bf16_TFLOPS, p.hbm_TBps * 1000) == pytest.approx(
            (r.memory_GiB, r.peak_bf16_TFLOPS, r.hbm_GBps)), name
        assert (p.intra, p.inter, p.gpus_per_node, p.nics_per_node) == (n.nvlink, n.nic, n.gpus, n.nics), name
        assert p.nic_Gbps == link(n.nic).lane_Gbps * link(n.nic).lanes, name


def test_a_memory_variant_is_the_same_chip_and_links():
    from commlab.hardware.gpus import VARIANTS, gpu

    for name, variant in VARIANTS.items():
        part = GPUS[name.rsplit("-", 1)[0]]
        assert (variant.compute_capability, variant.nvlinks, variant.pcie_gen, variant.p2p) == (
            part.compute_capability, part.nvlinks, part.pcie_gen, part.p2p)
        assert variant.memory_GiB != part.memory_GiB and str(int(variant.memory_GiB)) in variant.memory_source
    with pytest.raises(CommlabError, match="unknown GPU 'h900'; the GPUs are: p100"):
        gpu("h900")


def test_astras_local_memory_bandwidth_is_the_records_hbm():
    from commlab.cluster.astra import DEFAULT_LOCAL_MEM_GBPS, local_mem_GBps

    assert local_mem_GBps("h100") == GPUS["h100"].hbm_GBps == 3350.0
    assert GPUS["t4"].hbm_GBps is None and local_mem_GBps("t4") == DEFAULT_LOCAL_MEM_GBPS
