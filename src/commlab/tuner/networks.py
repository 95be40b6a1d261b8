"""Network kinds between nodes: what their NCCL net plugin tells NCCL, and what a network hop really costs.

NCCL's tuner adds the latency a net plugin reports (``ncclNetProperties.latency``) to every network hop, twice
for Simple (``tuning.cc:389-391``: ``interLat += graphs[a]->latencyInter``, then once more "for the flush").
Some plugins report a number meant to steer NCCL's choice rather than the hop's cost: AWS's aws-ofi-nccl
reports 75 us on p5 while AWS's own cost model in the same plugin charges 20 us per network hop there (and 3 us
more for Simple's completion); on p4d/p4de, which that model does not cover, the 75 us is the only figure.
The predictive model therefore keeps both: NCCL *picks* with the reported latency, as it does, and the time
of the pick is taken with the real one. :data:`NET_TYPES` lists each kind with its sources;
``Machine(net_latency_us=...)`` overrides the real per-hop latency for a network not listed.

A ring's network step costs more than NCCL's table says on the networks timed as NCCL's IB plugin (ib, roce, gib):
:data:`RING_NET_STEP_US` more, a constant no source gives, chosen on one shipped run and checked on the held-out
ones (``commlab/data/calibration.csv``), added to each of a ring's ``nInterSteps`` (tuning.cc:411) when the pick
runs, never to what NCCL ranks with. A hop the description or a calibration gives (``net_latency_us``) is the whole
of a step's extra cost, a ring's included.

>>> p5 = NET_TYPES["efa-p5"]
>>> p5.reported_latency_us, p5.hop_latency_us, p5.simple_extra_us
(75.0, 20.0, 3.0)
>>> NET_TYPES["ib"].hop_latency_us, NET_TYPES["ib"].ring_step_extra_us, NET_TYPES["efa-p5"].ring_step_extra_us
(0.0, 14.0, 0.0)
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from commlab.calibration import entry, value

#: aws/aws-ofi-nccl at commit 2daf7d30 (the plugin AWS ships for EFA)
AWS_OFI = "aws/aws-ofi-nccl 2daf7d30"
#: google/nccl-plugin-gpudirect-tcpxo at commit 04815d1 (v1.0.17, GPUDirect-TCPXO on GCP a3-megagpu-8g)
TCPXO = "google/nccl-plugin-gpudirect-tcpxo 04815d1 (v1.0.17)"
#: What one GPUDirect-TCPXO network hop adds, in us. No source states it (the plugin reports 0 to NCCL), so it is
#: calibrated on a real run and held against another (commlab/data/calibration.csv).
TCPXO_HOP_US = value("TCPXO_HOP_US")
#: The calibration run of :data:`TCPXO_HOP_US`, under ``commlab/data/nccl/``.
(TCPXO_CALIBRATION_LOG,) = entry("TCPXO_HOP_US").runs
#: What one network step of a ring costs beyond NCCL's ``hwLat[NET][Ring]`` on a network NCCL's IB plugin drives (or
#: one timed as it), us. No source states it: chosen on one shipped run, held against the held-out runs
#: (commlab/data/calibration.csv).
RING_NET_STEP_US = value("RING_NET_STEP_US")
#: The shipped log :data:`RING_NET_STEP_US` was chosen on (its number).
(RING_NET_STEP_LOG,) = entry("RING_NET_STEP_US").runs


@dataclass(frozen=True)
class NetType:
    """One kind of network between nodes, as NCCL sees it and as it runs."""

    name: str
    reported_latency_us: float
    """What the plugin reports to NCCL (``ncclNetProperties.latency``): NCCL adds it to every network hop, twice
    for Simple, when it ranks algorithms and protocols."""
    hop_latency_us: float | None
    """What a network hop really adds on top of NCCL's own per-hop figure (``hwLat[NET]``); None where no source
    gives it (then the reported latency is used, and :attr:`outside` says so)."""
    simple_extra_us: float
    """Extra per network hop for Simple (completion handling), instead of NCCL's doubling."""
    protocols: tuple[str, ...] = ("LL", "LL128", "Simple")
    """The protocols the transport's documented NCCL settings leave on (``NCCL_PROTO``)."""
    ring_step_extra_us: float = 0.0
    """What a ring's network step really costs beyond NCCL's ``hwLat[NET][Ring]`` and the hop above
    (:data:`RING_NET_STEP_US` where the hop is NCCL's own figure; 0 where the hop is a plugin's own cost, sourced or
    chosen on a ring run)."""
    source: str = ""
    outside: str | None = None
    """What of this transport the model does not know, when something is missing."""

    @property
    def real_hop_us(self) -> float:
        """The per-hop latency the predictive model times with (reported where nothing better is sourced)."""
        return self.reported_latency_us if self.hop_latency_us is None else self.hop_latency_us

    def real_simple_extra_us(self) -> float:
        return self.reported_latency_us if self.hop_latency_us is None else self.simple_extra_us


#: The network kinds a machine description may name (``net=``).
NET_TYPES = MappingProxyType({t.name: t for t in (
    NetType("ib", 0.0, 0.0, 0.0, ring_step_extra_us=RING_NET_STEP_US, source=(
            "NCCL's own IB/RoCE plugin reports 0 (NVIDIA/nccl src/transport/net_ib/init.cc:558); NCCL's hwLat[NET] "
            f"is its hop, and a ring's network step {RING_NET_STEP_US:g} us more (RING_NET_STEP_US)")),
    NetType("roce", 0.0, 0.0, 0.0, ring_step_extra_us=RING_NET_STEP_US, source=(
            "NCCL's IB plugin over RoCE: reports 0 (net_ib/init.cc:558); a ring's network step as over IB")),
    NetType("socket", 0.0, 0.0, 0.0, source="NCCL's socket plugin reports 0 (src/transport/net_socket.cc:174)"),
    NetType("efa", 75.0, 75.0, 75.0, source=(
        f"EFA on p4d/p4de ({AWS_OFI}, SENDRECV protocol): the plugin reports 75 us (src/platform-aws.cpp:87, "
        "101); AWS's own cost model has no p4d entry (src/tuner/nccl_ofi_model.cpp covers p5/p5e and p5en), so "
        "the reported figure, added twice for Simple as NCCL does, is the only one")),
    NetType("efa-p5", 75.0, 20.0, 3.0, source=(
        f"EFA on p5/p5e ({AWS_OFI}, RDMA protocol): the plugin reports 75 us (src/platform-aws.cpp:137) to "
        "steer NCCL; AWS's cost model for p5/p5e charges 20 us per network hop (src/tuner/nccl_ofi_model.cpp:15, "
        "net_lat) plus 3 us for Simple, '~2 us in the device and ~1 us to write that completion up to the host "
        "stack' (include/nccl_ofi_param.h:288-291)")),
    NetType("efa-p5en", 35.0, 18.0, 3.0, source=(
        f"{AWS_OFI}: reports 35 us on p5en/p6 (src/platform-aws.cpp:154-251); its cost model charges 18 us per "
        "network hop on p5en (src/tuner/nccl_ofi_model.cpp:30) plus the 3 us Simple completion "
        "(include/nccl_ofi_param.h:291)")),
    NetType("gib", 0.0, 0.0, 0.0, ring_step_extra_us=RING_NET_STEP_US, source=(
        "Google's gIB plugin (RDMA over RoCE on GCP A4/A3 Ultra), run with Google's tuner config "
        "(NCCL_NET=gIB, NCCL_TUNER_CONFIG_PATH=/usr/local/gib/configs/tuner_config_a4.txtpb: "
        "GoogleCloudPlatform/PerfKitBenchmarker perfkitbenchmarker/data/nvidia_hpl/a4.dockerfile); timed as "
        "NCCL's IB plugin"), outside=("the protocol per size is picked by Google's tuner config "
                                       "(tuner_config_a4.txtpb), which is not published; the model picks as NCCL "
                                       "does")),
    NetType("tcpxo", 0.0, TCPXO_HOP_US, 0.0, protocols=("LL128", "Simple"), source=(
        f"{TCPXO}: the plugin reports latency 0 (tcpdirect_plugin/fastrak_offload/nccl_shim.cc:966) and Google's "
        "NCCL profile for it turns LL off (tcpxo_scripts/nccl-env-profile.sh:51, NCCL_PROTO=Simple,LL128); "
        f"what a hop really costs, {TCPXO_HOP_US:g} us, is in no source (its scripts export "
        "NCCL_GPUDIRECTTCPX_REPORT_NETWORK_LATENCY=80, which no released code reads): chosen on one real run, held "
        "against another (TCPXO_HOP_US)")),
)})
