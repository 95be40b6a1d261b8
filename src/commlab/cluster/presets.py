"""Named clusters: the machines of the shipped nccl-tests logs, and the big systems readers hear about.

Every preset names its sources. Where a source is silent (cloud providers do not publish their fabrics'
shapes), ``Cluster.notes`` says what commlab assumes; while a fabric is non-blocking its shape changes
nothing but a few switch hops of latency.

>>> [c.name for c in presets()][:3]
['dgx-h100-ndr', 'h100-1k-superpod', 'h100-16k-roce']
>>> preset("dgx-h100-ndr").max_nodes, preset("h100-16k-roce").default_nodes * 8
(8192, 16384)
>>> preset("dgx-h200")    # doctest: +ELLIPSIS
Traceback (most recent call last):
...
commlab.errors.CommlabError: unknown cluster preset 'dgx-h200'; the presets are: dgx-h100-ndr, ...
"""
from __future__ import annotations

from commlab.cluster.spec import Cluster, Fabric
from commlab.errors import CommlabError

_QM9700 = "NVIDIA Quantum-2 QM9700, 64 x 400 Gb/s NDR"
_QM_SRC = "NVIDIA Quantum-2 QM9700 (64 NDR ports, SHARPv3): https://www.nvidia.com/en-us/networking/infiniband/qm9700/"
_QM_LATENCY = ("switch latency 0.13 us: the figure NVIDIA publishes for its HDR predecessor QM8700 (the QM9700 data "
               "sheet gives none)")
_FAT_TREE = ("k-port switches make k^2/2 non-blocking host ports on two levels, k^3/4 on three (Al-Fares et al., "
             "SIGCOMM 2008): https://doi.org/10.1145/1402958.1402967")
_SUPERPOD = ("NVIDIA DGX SuperPOD reference architecture (DGX H100), network fabrics: rail-optimised, full fat tree of "
             "QM9700 switches, scalable units of 32 nodes: "
             "https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-h100/latest/"
             "network-fabrics.html")
_DGX_H100 = ("NVIDIA DGX H100 user guide: 8 x H100 SXM on 4 NVSwitches, 8 single-port ConnectX-7 400 Gb/s NDR for the "
             "compute fabric: https://docs.nvidia.com/dgx/dgxh100-user-guide/introduction-to-dgxh100.html")
_SHARP = ("SHARP needs rail-aligned leaves (one aggregation flow per NIC rail): "
          "https://docs.nvidia.com/networking/display/hpcxv226/NCCL-RDMA-SHARP+Plugins")
_EFA = ("aws-ofi-nccl, the EFA plugin: 75 us of network latency reported to NCCL on p4d/p4de/p5; on p5 four 100 Gb/s "
        "EFA ports per GPU form one 400 Gb/s NCCL device: https://github.com/aws/aws-ofi-nccl "
        "(src/platform-aws.cpp)")
_ULTRA = ("Amazon EC2 UltraClusters: 'non-blocking petabit-scale network', shape not published: "
          "https://aws.amazon.com/ec2/ultraclusters/")
_CLOUD_NOTE = ("the provider does not publish the fabric's shape or wiring: commlab assumes a non-blocking fat tree of "
               "64-port switches with top-of-rack leaves, so only switch hops (1 us each, an assumption) depend on it")


def _dgx_h100_ndr() -> Cluster:
    return Cluster(
        "dgx-h100-ndr", "DGX H100 nodes, 8 x NDR 400 Gb/s each, on a rail-optimised NDR InfiniBand fat tree",
        "h100", 8, 8, 400, "ib",
        Fabric(levels=3, leaf_nics=32, pod_leaves=32, pods=64, oversubscription=(1.0, 1.0), rail_optimised=True,
               sharp=True, switch=_QM9700, radix=64, switch_latency_us=0.13),
        (_DGX_H100, _SUPERPOD, _QM_SRC, _FAT_TREE, _SHARP),
        nic="ConnectX-7, 400 Gb/s InfiniBand NDR, one per GPU", default_nodes=32,
        notes="beyond one pod of 4 scalable units (128 nodes) a third, non-blocking level of QM9700 switches "
              f"(k^3/4 = 65,536 ports); {_QM_LATENCY}")


def _h100_1k() -> Cluster:
    return Cluster(
        "h100-1k-superpod", "1,024 H100: 128 DGX H100 (4 scalable units), two-level rail-optimised NDR fat tree",
        "h100", 8, 8, 400, "ib",
        Fabric(levels=2, leaf_nics=32, pod_leaves=32, oversubscription=(1.0,), rail_optimised=True, sharp=True,
               switch=_QM9700, radix=64, switch_latency_us=0.13),
        (_DGX_H100, _SUPERPOD, _QM_SRC, _SHARP),
        nic="ConnectX-7, 400 Gb/s InfiniBand NDR, one per GPU", default_nodes=128,
        notes=f"the RA's 4-SU fabric with all 128 node slots used (the RA keeps one slot for UFM); {_QM_LATENCY}")


def _h100_16k_roce() -> Cluster:
    return Cluster(
        "h100-16k-roce", "16,384 of the 24,576 H100 of Meta's RoCE cluster (Llama 3 405B): 3-level Clos, 1:7 "
        "above each 3,072-GPU pod",
        "h100", 8, 8, 400, "roce",
        Fabric(levels=3, leaf_nics=16, pod_leaves=192, pods=8, oversubscription=(1.0, 7.0), rail_optimised=False,
               sharp=False, switch="Minipack2 top-of-rack switches; Arista 7800 cluster and aggregation switches",
               radix=64, switch_latency_us=1.0),
        ("Llama 3 paper, section 3.3.1: 24K GPUs on a three-layer Clos; racks of 16 GPUs (two servers) under one "
         "ToR; 192 racks form a 3,072-GPU pod with full bisection; 8 pods joined by aggregation switches at 1:7 "
         "oversubscription; 16K GPUs trained Llama 3 405B: https://arxiv.org/abs/2407.21783",
         "Meta, 'RoCE networks for distributed AI training at scale' (2024): "
         "https://engineering.fb.com/2024/08/05/data-center-engineering/roce-network-distributed-ai-training-at-scale/",
         "Meta, 'Building Meta's GenAI infrastructure' (2024): 24,576 H100 per cluster, 400 Gb/s per GPU: "
         "https://engineering.fb.com/2024/03/12/data-center-engineering/building-metas-genai-infrastructure/"),
        nic="400 Gb/s RoCE v2 NIC per GPU", default_nodes=2048,
        notes="switch latency 1 us per hop (an assumption for deep-buffer Ethernet switches); Meta's SIGCOMM 2024 "
              "paper gives its ToRs twice as much bandwidth up as down, which commlab leaves out (1:1)")


def _aws_p4de() -> Cluster:
    return Cluster(
        "aws-p4de", "AWS p4de.24xlarge: 8 x A100 80GB on NVSwitch, 4 x 100 Gb/s EFA (logs 08 and 10)",
        "a100", 8, 4, 100, "efa",
        Fabric(levels=3, leaf_nics=32, pod_leaves=32, pods=16, oversubscription=(1.0, 1.0), rail_optimised=False,
               switch="not published (EC2 UltraCluster)", radix=64, switch_latency_us=1.0),
        ("Amazon EC2 P4 instances: p4de.24xlarge, 8 A100 80GB, 600 GB/s NVSwitch, 400 Gb/s EFA: "
         "https://aws.amazon.com/ec2/instance-types/p4/", _EFA, _ULTRA),
        nic="Elastic Fabric Adapter, 100 Gb/s", cpu="intel", notes=_CLOUD_NOTE)


def _aws_p5() -> Cluster:
    return Cluster(
        "aws-p5", "AWS p5.48xlarge: 8 x H100 on NVSwitch, 32 x 100 Gb/s EFA = 8 NCCL devices of 400 Gb/s (log 09)",
        "h100", 8, 8, 400, "efa-p5",
        Fabric(levels=3, leaf_nics=32, pod_leaves=32, pods=20, oversubscription=(1.0, 1.0), rail_optimised=False,
               switch="not published (EC2 UltraCluster)", radix=64, switch_latency_us=1.0),
        ("Amazon EC2 P5 instances: p5.48xlarge, 8 H100, 3,200 Gb/s EFA, UltraClusters of up to 20,000 GPUs, AMD "
         "EPYC hosts: https://aws.amazon.com/ec2/instance-types/p5/", _EFA, _ULTRA),
        nic="Elastic Fabric Adapter, 4 x 100 Gb/s per GPU", cpu="amd", notes=_CLOUD_NOTE)


def _gcp_a3_mega() -> Cluster:
    return Cluster(
        "gcp-a3-mega", "GCP a3-megagpu-8g: 8 x H100 on NVSwitch, 8 x 200 Gb/s GPUDirect-TCPXO (log 12)",
        "h100", 8, 8, 200, "tcpxo",
        Fabric(levels=3, leaf_nics=32, pod_leaves=32, pods=8, oversubscription=(1.0, 1.0), rail_optimised=False,
               switch="not published (Google Jupiter)", radix=64, switch_latency_us=1.0),
        ("Google Cloud accelerator-optimized machines, A3 Mega: 8 H100, 8 NICs of 200 Gb/s (1,600 Gb/s) for "
         "GPUDirect-TCPXO: https://cloud.google.com/compute/docs/accelerator-optimized-machines#a3-vms",
         "GPUDirect-TCPXO: https://cloud.google.com/kubernetes-engine/docs/how-to/gpu-bandwidth-gpudirect-tcpx"),
        nic="200 Gb/s NIC with GPUDirect-TCPXO (a TCP plugin: no latency reported to NCCL)", notes=_CLOUD_NOTE)


def _oci_a100() -> Cluster:
    return Cluster(
        "oci-a100-roce", "OCI BM.GPU4.8: 8 x A100 40GB on NVSwitch, 16 x 100 Gb/s RoCE v2 (log 11)",
        "a100", 8, 16, 100, "roce",
        Fabric(levels=3, leaf_nics=32, pod_leaves=32, pods=16, oversubscription=(1.0, 1.0), rail_optimised=False,
               switch="not published (OCI cluster network)", radix=64, switch_latency_us=1.0),
        ("Oracle Cloud compute shapes, BM.GPU4.8: 8 A100 40GB, AMD EPYC, 1,600 Gb/s RDMA cluster network "
         "(16 x 100 Gb/s): https://docs.oracle.com/en-us/iaas/Content/Compute/References/computeshapes.htm",
         "OCI cluster networks (RoCE v2, non-blocking): "
         "https://docs.oracle.com/en-us/iaas/Content/Compute/Tasks/managingclusternetworks.htm"),
        nic="100 Gb/s RoCE v2 port, two per GPU", cpu="amd", notes=_CLOUD_NOTE)


def _gke_a4() -> Cluster:
    return Cluster(
        "gke-a4", "GCP A4 (a4-highgpu-8g): 8 x B200 on NVLink 5 NVSwitch, 8 x 400 Gb/s RoCE (log 13)",
        "b200", 8, 8, 400, "gib",
        Fabric(levels=3, leaf_nics=32, pod_leaves=32, pods=16, oversubscription=(1.0, 1.0), rail_optimised=False,
               switch="not published (Google RDMA network)", radix=64, switch_latency_us=1.0),
        ("Google Cloud accelerator-optimized machines, A4: 8 B200, 8 ConnectX-7 400 Gb/s RDMA (RoCE) NICs, "
         "3,200 Gb/s: https://cloud.google.com/compute/docs/accelerator-optimized-machines#a4-vms",
         "GKE A4 blueprint and its nccl-tests run (log 13): "
         "https://github.com/GoogleCloudPlatform/cluster-toolkit/tree/main/examples/gke-a4"),
        nic="ConnectX-7, 400 Gb/s RoCE v2, one per GPU", notes=_CLOUD_NOTE)


def _dgx2() -> Cluster:
    return Cluster(
        "dgx-2", "DGX-2: 16 x V100 SXM3 on 12 NVSwitches, 8 x 100 Gb/s EDR InfiniBand (logs 19-23 use 12 GPUs)",
        "v100", 16, 8, 100, "ib",
        Fabric(levels=2, leaf_nics=18, pod_leaves=36, oversubscription=(1.0,), rail_optimised=True,
               switch="Mellanox SB7800, 36 x 100 Gb/s EDR", radix=36, switch_latency_us=0.09),
        ("NVIDIA DGX-2 user guide: 16 V100 SXM3, 12 NVSwitches (6 NVLink 2 links per GPU), 8 ConnectX-5 EDR "
         "100 Gb/s ports: https://docs.nvidia.com/dgx/dgx2-user-guide/introduction-to-dgx2.html",
         "Mellanox SB7800 (36 EDR ports, 90 ns port-to-port): "
         "https://network.nvidia.com/pdf/prod_ib_switch_systems/pb_sb7800.pdf"),
        nvlinks=6, nic="ConnectX-5, 100 Gb/s InfiniBand EDR", notes="a non-blocking two-level fat tree of 36-port "
        "EDR switches, rail-optimised as in NVIDIA's DGX PODs (no document gives the DGX-2 POD's wiring)")


def _gb200_nvl72() -> Cluster:
    return Cluster(
        "gb200-nvl72", "GB200 NVL72 racks: 72 B200 in one NVLink domain (18 trays of 4), 4 x 400 Gb/s NDR per tray",
        "gb200", 4, 4, 400, "ib",
        Fabric(levels=3, leaf_nics=32, pod_leaves=32, pods=64, oversubscription=(1.0, 1.0), rail_optimised=True,
               sharp=True, switch=_QM9700, radix=64, switch_latency_us=0.13),
        ("NVIDIA GB200 NVL72: 72 Blackwell GPUs in one NVLink domain, 1.8 TB/s per GPU: "
         "https://www.nvidia.com/en-us/data-center/gb200-nvl72/",
         "A GB200 NVL72 compute tray: 4 GPUs and 4 ConnectX-7 (MLCommons system description): "
         "https://github.com/mlcommons/inference_results_v6.1/blob/main/closed/Crusoe/systems/"
         "GB200-NVL72_GB200-186GB_aarch64x16_Dynamo.json",
         "NVIDIA DGX SuperPOD reference architecture (DGX GB200): 8-rack scalable units on an NDR compute fabric: "
         "https://docs.nvidia.com/dgx-superpod/reference-architecture-scalable-infrastructure-gb200/latest/",
         _QM_SRC, _SHARP),
        nvlink_domain=72, nic="ConnectX-7, 400 Gb/s InfiniBand NDR, one per GPU", default_nodes=144,
        notes="NCCL sees one rack as one node (multi-node NVLink); a rail-optimised three-level fat tree of QM9700 "
              "switches as for DGX H100; Grace (Arm) hosts take NCCL's non-x86 defaults, the same as Intel's")


_BUILDERS = (_dgx_h100_ndr, _h100_1k, _h100_16k_roce, _gb200_nvl72, _aws_p4de, _aws_p5, _gcp_a3_mega, _oci_a100,
             _gke_a4, _dgx2)


def presets() -> tuple[Cluster, ...]:
    """Every preset, big systems first, then the machines of the shipped logs."""
    return tuple(build() for build in _BUILDERS)


def preset_names() -> tuple[str, ...]:
    return tuple(c.name for c in presets())


def preset(name: object) -> Cluster:
    """One preset by name (case and spaces ignored); an unknown name lists the presets."""
    key = str(name).strip().lower().replace("_", "-")
    for cluster in presets():
        if cluster.name == key:
            return cluster
    raise CommlabError(f"unknown cluster preset {name!r}; the presets are: {', '.join(preset_names())}")
