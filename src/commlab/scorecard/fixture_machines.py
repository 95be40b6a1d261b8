"""The machine of each shipped nccl-tests log, as a ``--machine`` description, and where it comes from.

Each entry is read from the log's ``# hardware:`` line (and ``roofs.json``, which names the same machines);
where the line names a cloud instance, the instance's published NIC layout fills in what the line leaves out,
and the entry says so. ``None`` where the log cannot be described: the reason is given.

NICs are counted as NCCL sees them: on AWS p5 the aws-ofi-nccl plugin's RDMA protocol (its default there,
aws/aws-ofi-nccl ``src/platform-aws.cpp``, ``p5/p5e`` entry) stripes each GPU's four 100 Gb/s EFA ports into
one NCCL device, so NCCL sees 8 devices of 400 Gb/s; on p4d/p4de it uses the SENDRECV protocol over the 4
EFA devices.

>>> fixture_machine(7).desc
'gpu=h100,gpus_per_node=8'
>>> fixture_machine(10).desc is None
True
"""
from __future__ import annotations

from dataclasses import dataclass

from commlab.tuner.machine import Machine, parse_machine
from commlab.errors import CommlabError


@dataclass(frozen=True)
class FixtureMachine:
    number: int
    desc: str | None
    why: str
    outside_model: str | None = None
    """What in this run NCCL's tuning model does not describe, when its prediction is known to miss."""

    @property
    def machine(self) -> Machine | None:
        return None if self.desc is None else parse_machine(self.desc)


_NO_P2P = ("P2P off: NCCL stages every byte through host memory (SHM transport, commlab.tuner.shm), which its "
           "tuning model budgets as the PCIe link")
_DGX2 = "DGX-2: V100-SXM3 on NVSwitch, 6 NVLink 2 links per GPU; 12 of its 16 GPUs"

_TABLE = {
    1: ("gpu=a100,gpus_per_node=4", "DGX A100: 4 of 8 A100-SXM4 on NVSwitch (NV12)"),
    2: ("gpu=a100,gpus_per_node=4,nvlink=0,pcie=4,p2p=0,cpu=amd",
        f"DGX A100 with NCCL_P2P_DISABLE=1 (AMD EPYC hosts, PCIe Gen4); {_NO_P2P}"),
    3: ("gpu=h100,gpus_per_node=4", "DGX H100: 4 of 8 H100 SXM on NVSwitch 3 (NV18)"),
    4: ("gpu=a40,gpus_per_node=2,nvlink=3,nvswitch=0", "2 A40 PCIe cards joined by an NVLink bridge (NV4)"),
    5: ("gpu=a40,gpus_per_node=4,pcie=4,p2p=0,path=sys",
        f"4 A40 PCIe Gen4 across the CPU sockets (SYS), NCCL 2.16.2; {_NO_P2P}"),
    6: ("gpu=a40,gpus_per_node=2,pcie=4,p2p=0,path=node",
        f"2 A40 PCIe Gen4 under one CPU (NODE), NCCL 2.16.2; {_NO_P2P}"),
    7: ("gpu=h100,gpus_per_node=8", "p5.48xlarge: 8 H100 SXM on NVSwitch (NVLS available)"),
    8: ("gpu=a100,gpus_per_node=8,nodes=2,nics_per_node=4,nic_Gbps=100,net=efa",
        "2 p4de.24xlarge: 8 A100-SXM4 on NVSwitch, 4 x 100 Gb/s EFA per node"),
    9: ("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400,net=efa-p5,cpu=amd",
        "2 p5.48xlarge: 8 H100 SXM on NVSwitch, 32 x 100 Gb/s EFA per node, which NCCL sees as 8 x 400 Gb/s "
        "(aws-ofi-nccl RDMA protocol); AMD EPYC hosts (AWS's p5 specification)"),
    10: (None, "scatter over EFA on 2 nodes of an instance the log does not name (p4d or p4de), and scatter is "
               "nccl-tests' grouped send/recv, which NCCL's tuner does not model"),
    11: ("gpu=a100,gpus_per_node=8,nodes=2,nics_per_node=16,nic_Gbps=100,net=roce,cpu=amd",
         "2 OCI BM.GPU4.8: 8 A100-SXM4-40GB on NVSwitch, AMD EPYC hosts; its RDMA cluster network is 16 x 100 Gb/s "
         "RoCEv2 ports per node (OCI's published shape: 1.6 Tb/s), not stated in the log"),
    12: ("gpu=h100,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=200,net=tcpxo",
         "2 GCP a3-megagpu-8g: 8 H100 on NVSwitch, GPUDirect-TCPXO 8 x 200 Gb/s (a TCP plugin: no latency "
         "reported to NCCL; Google's NCCL profile leaves LL off)"),
    13: ("gpu=b200,gpus_per_node=8,nodes=2,nics_per_node=8,nic_Gbps=400,net=gib",
         "2 GCP A4 (a4-highgpu-8g): 8 B200 on NVLink 5 NVSwitch; 8 x 400 Gb/s RDMA NICs per node from the "
         "published A4 machine type (the log says only 'RDMA NICs'), Google's gIB plugin (the job's image "
         "nccl-plugin-gib-diagnostic, NCCL_NET=gIB)"),
    14: ("gpu=rtx2080ti,gpus_per_node=2,pcie=3,p2p=0,path=pix", f"2 RTX 2080 Ti, PCIe Gen3 x16 (PIX); {_NO_P2P}"),
    15: ("gpu=rtx2080ti,gpus_per_node=2,pcie=3,p2p=0,path=pix", f"2 RTX 2080 Ti, PCIe Gen3 x16 (PIX); {_NO_P2P}"),
    16: ("gpu=rtx2080ti,gpus_per_node=2,pcie=3,p2p=0,path=pix", f"2 RTX 2080 Ti, PCIe Gen3 x16 (PIX); {_NO_P2P}"),
    17: ("gpu=rtx2080ti,gpus_per_node=2,pcie=3,p2p=0,path=pix", f"2 RTX 2080 Ti, PCIe Gen3 x16 (PIX); {_NO_P2P}"),
    18: (None, "alltoall is nccl-tests' grouped send/recv, which NCCL's tuner does not model "
               "(2 RTX 2080 Ti, PCIe Gen3, P2P off)"),
    19: ("gpu=v100,gpus_per_node=12,nvswitch=1",
         _DGX2 + "; NCCL 2.5 copies a misaligned block element by element (see 23), which slows this log's "
                 "out-of-place column (output blocks misaligned, input aligned) but not its in-place one, the "
                 "faster timing the scorecard measures (commlab.nccl.records.Row.fastest)"),
    20: ("gpu=v100,gpus_per_node=12,nvswitch=1", _DGX2),
    21: ("gpu=v100,gpus_per_node=12,nvswitch=1", _DGX2),
    22: ("gpu=v100,gpus_per_node=12,nvswitch=1", _DGX2),
    23: ("gpu=v100,gpus_per_node=12,nvswitch=1", _DGX2),
}


_LEGACY = ("NCCL of the 2.5 era (nccl-tests before 2020-06: format legacy) copies a step element by element "
           "when its source and destination differ in 16-byte alignment (NVIDIA/nccl v2.5.6 "
           "src/collectives/device/common_kernel.h, ReduceOrCopyMulti: 'alignDiff ? Nrem'; unrolled from "
           "v2.8.4); on 12 ranks each rank's block is count x 4 bytes with count not a multiple of 4, so ")
#: Where the prediction misses and why (the scorecard shows it; tests hold the parts the model does cover).
_OUTSIDE = {
    2: ("AMD EPYC host (DGX A100, NCCL 2.16.2): SHM runs at 5.2 GB/s per GPU, 34% above the two-way rate chosen "
        "on shipped log 06 and checked on 14-15 (commlab.tuner.shm). Other AMD hosts disagree with it (8 RTX 4090 "
        "under EPYC 7542: 14.9 GB/s), and NCCL 2.16's copy is the same SM load/store through /dev/shm memory on "
        "every host (shm.cc, shmutils.cc), so no rule over the described fields gives a second rate"),
    5: ("across the CPU sockets (SYS) the SHM ring runs at 1.35-1.44 GB/s per GPU, 2.7x slower than on one CPU "
        "of the same server (shipped log 06); NCCL's figures for the link between CPUs (9 GB/s Skylake UPI in 2.16, "
        "16 GB/s AMD; topo.h) do not bind, and a SYS ring on AMD runs 10x faster (14.9 GB/s, 8 RTX 4090), so "
        "the CPU vendor or path alone cannot give it; no source found gives what does"),
    23: _LEGACY + ("every step on a misaligned block takes the slow path: 0.4-0.5 of the ring rate, alternating "
                   "with the parity of count (half or three quarters of the blocks misaligned); the slow path's "
                   "rate is in no source (shipped log 19 shows it only in its slower, out-of-place column), so it is "
                   "not modelled"),
}


def fixture_machine(key: str | int) -> FixtureMachine:
    """The described machine of a shipped log (key as :func:`commlab.nccl.nccl_tests_log` takes it)."""
    from commlab.nccl.examples import nccl_tests_log

    number = int(nccl_tests_log(key).name[:2])
    if number not in _TABLE:
        raise CommlabError(f"nccl-tests log {number:02d} has no machine entry; the entries are {sorted(_TABLE)}")
    desc, why = _TABLE[number]
    return FixtureMachine(number, desc, why, _OUTSIDE.get(number))
