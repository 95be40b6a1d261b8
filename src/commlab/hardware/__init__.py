"""The hardware the book's models stand on: the catalogue of links (:mod:`commlab.hardware.links`, re-exported
here: ``from commlab.hardware import link``) and the record of each GPU (:mod:`commlab.hardware.gpus`: memory,
HBM bandwidth, BF16 peak, NVLink, PCIe, P2P, compute capability, each with its source; import it by name)."""
from commlab.hardware.links import (
    IB_LATENCY_US, ROCE_LATENCY_US, Link, bandwidth_ratio, link, links, names, pcie_payload_GBps, tlp_efficiency,
)

__all__ = ["IB_LATENCY_US", "ROCE_LATENCY_US", "Link", "bandwidth_ratio", "link", "links", "names", "pcie_payload_GBps",
           "tlp_efficiency"]
