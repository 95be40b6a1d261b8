"""hardware: the catalogue against the vendors' published figures (written here independently)."""
import pytest

from commlab import hardware
from commlab.errors import CommlabError

# (name, one-way GB/s per GPU or per port), from the vendors' spec sheets
PUBLISHED_UNIDIR = {
    "pcie4": 32, "pcie5": 64, "nvlink2": 150, "nvlink3": 300, "nvlink4": 450, "nvlink5": 900,
    "ib-hdr": 25, "ib-ndr": 50, "ib-xdr": 100, "roce-400": 50, "roce-100": 12.5,
}


@pytest.mark.parametrize("name, unidir", sorted(PUBLISHED_UNIDIR.items()))
def test_published_figures(name, unidir):
    item = hardware.link(name)
    assert item.unidir_GBps == unidir
    assert item.bidir_GBps == 2 * unidir


def test_nvlink_per_gpu_is_per_link_times_links():
    for item in hardware.links():
        if item.kind == "nvlink":
            assert item.per_link_bidir_GBps * item.links_per_gpu == item.bidir_GBps


def test_every_link_has_a_source_and_a_latency():
    for item in hardware.links():
        assert item.source and item.latency_s > 0 and item.year > 2000


def test_nvlink_over_pcie5_is_about_7x_and_14x_not_14_to_28():
    # CONTENT.md: the seed's "14-28x" holds against PCIe 4.0, not 5.0.
    pcie5, pcie4 = hardware.link("pcie5").unidir_GBps, hardware.link("pcie4").unidir_GBps
    assert round(hardware.link("nvlink4").unidir_GBps / pcie5) == 7
    assert round(hardware.link("nvlink5").unidir_GBps / pcie5) == 14
    assert round(hardware.link("nvlink4").unidir_GBps / pcie4) == 14
    assert round(hardware.link("nvlink5").unidir_GBps / pcie4) == 28


def test_unknown_link_lists_known_names():
    with pytest.raises(CommlabError, match="nvlink4"):
        hardware.link("nvlink99")


def test_names_unique_and_lookup_forgiving():
    assert len(set(hardware.names())) == len(hardware.names())
    assert hardware.link("IB-NDR") is not None and hardware.link("NVLink 4").name == "nvlink4"


def test_pcie_line_codes_and_packet_overheads():
    # Intel AN 456: 256-byte payload, 20 bytes of overhead: 256 / 276 = 92 %; 128b/130b from PCIe 3.0
    assert round(hardware.tlp_efficiency(256, 20), 2) == 0.93 and round(256 / 276, 2) == 0.93
    for gen in (3, 4, 5):
        item = hardware.link(f"pcie{gen}")
        assert item.line_code == "128b/130b" and item.line_code_efficiency == 128 / 130
    assert hardware.link("pcie6").line_code_efficiency == 242 / 256
    payload = hardware.pcie_payload_GBps("pcie5")
    assert payload == pytest.approx(64 * 128 / 130 * 256 / 276)
    # pinned host-to-device measured 55.2 GB/s on an H200 (benchmarks/README.md): below the packet bound
    assert 55.2 < payload < hardware.link("pcie5").unidir_GBps


def test_pcie_efficiency_arguments_are_checked():
    with pytest.raises(CommlabError, match="max_payload_nbytes"):
        hardware.tlp_efficiency(0)
    with pytest.raises(CommlabError, match="PCIe link"):
        hardware.pcie_payload_GBps("nvlink4")


def test_roce_reaches_800_gbit_like_xdr():
    assert hardware.link("roce-800").unidir_GBps == hardware.link("ib-xdr").unidir_GBps == 100
    assert hardware.link("roce-400").unidir_GBps == hardware.link("ib-ndr").unidir_GBps
