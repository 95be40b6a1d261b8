"""Chapter 1, understanding: what `nvidia-smi topo -m` says, where a TP group belongs, meshes and switches."""
from __future__ import annotations

from commlab import hardware
from commlab.exercises.bank.common import num, pick, rate
from commlab.exercises.bank.concepts import wrong_sentence
from commlab.exercises.model import Choice, Exercise, Worked, choice_worked

#: nvidia-smi topo -m's legend (NVIDIA's nvidia-smi, the lines it prints under the matrix)
_LEGEND = {
    "SYS": "the connection traverses PCIe as well as the SMP interconnect between NUMA nodes (QPI/UPI)",
    "NODE": "the connection traverses PCIe as well as the interconnect between PCIe host bridges within a NUMA node",
    "PHB": "the connection traverses PCIe as well as a PCIe host bridge (typically the CPU)",
    "PXB": "the connection traverses multiple PCIe bridges (without traversing the PCIe host bridge)",
    "PIX": "the connection traverses at most a single PCIe bridge",
}


def _topo_legend(rng) -> Worked:
    a, b = sorted(int(x) for x in rng.choice(8, size=2, replace=False))
    asked = pick(rng, ("SYS", "PIX"))
    if asked == "SYS":
        stem = (f"In `nvidia-smi topo -m`, the entry for GPU{a} and GPU{b} is one of the codes below. Which code "
                "means their traffic crosses the link between the two CPU sockets, the slowest path of a server?")
    else:
        stem = (f"In `nvidia-smi topo -m`, the entry for GPU{a} and GPU{b} is one of the codes below. Which code "
                "means the two GPUs sit behind the same PCIe switch, with at most one bridge between them?")
    right = Choice(asked, f"{asked}: {_LEGEND[asked]} (nvidia-smi's legend).")
    wrong = [Choice(code, f"{code} means {_LEGEND[code]}.") for code in _LEGEND if code != asked][:3]
    solution = f"nvidia-smi's legend: {asked} = {_LEGEND[asked]}."
    return choice_worked(rng, stem, right, wrong, solution, params={"asked": asked})


def _tp_group(rng) -> Worked:
    link = hardware.link(pick(rng, ("nvlink3", "nvlink4")))
    sys_link = hardware.link("pcie4" if link.name == "nvlink3" else "pcie5")
    stem = (f"An 8-GPU server has two NVLink islands: GPUs 0-3 are joined by {link.title} ({rate(link.unidir_Bps)} "
            f"one way), GPUs 4-7 too, and a pair across the islands shows SYS (through the CPUs, at best "
            f"{rate(sys_link.unidir_Bps)}). A job runs tensor parallelism of 4 and data parallelism of 2. Which "
            "grouping of GPUs into TP groups is right?")
    ratio = link.unidir_GBps / sys_link.unidir_GBps
    right = Choice("TP {0,1,2,3} and {4,5,6,7}; DP pairs (0,4), (1,5), (2,6), (3,7)",
                   f"TP all-reduces run in every layer, forward and backward: they belong on NVLink, about "
                   f"{num(ratio, 2)} times faster here; DP's one gradient all-reduce per step can take the slow path.")
    wrong = [Choice("TP {0,2,4,6} and {1,3,5,7}; DP pairs (0,1), (2,3), (4,5), (6,7)",
                    "Interleaving puts every TP group across the islands: each of the many TP all-reduces then "
                    "runs at the SYS path's speed, and the fast NVLink carries only DP."),
             Choice("Any grouping: NCCL routes around the slow path by itself",
                    "NCCL picks rings and trees inside the GPUs you give it; it cannot move a TP group's traffic "
                    "off the SYS path when the group spans both islands."),
             Choice("TP {0,1,4,5} and {2,3,6,7}: each group touches both CPUs, which balances the load",
                    "Half of each TP group is across the CPUs: every TP all-reduce crosses SYS, the slowest link of "
                    "the server.")]
    solution = ("Put the group that communicates most (TP: collectives in every layer) on the fastest links (the "
                f"NVLink islands); DP pairs cross the islands. NVLink {rate(link.unidir_Bps)} vs "
                f"{rate(sys_link.unidir_Bps)}.")
    return choice_worked(rng, stem, right, wrong, solution, params={"link": link.name})


def _mesh_paragraph(rng) -> Worked:
    n = int(pick(rng, (4, 6, 8, 16)))
    link = hardware.link(pick(rng, ("nvlink3", "nvlink4", "nvlink5")))
    pcie = hardware.link(pick(rng, ("pcie4", "pcie5")))
    both, one = rate(link.bidir_GBps * 1e9), rate(link.unidir_Bps)
    claims = [
        (f"{link.title} gives one GPU {both} counting both directions, {one} one way.",
         f"{link.links_per_gpu} links of {num(link.per_link_bidir_GBps or 0)} GB/s bidirectional each; a transfer "
         "uses one direction.",
         f"{link.title} lets one GPU copy {both} to another in one direction.",
         f"{both} counts both directions together; one way it is {one}."),
        (f"A {pcie.title} slot moves {rate(pcie.unidir_Bps)} one way.",
         f"{pcie.lanes} lanes of {num(pcie.lane_Gbps or 0)} Gb/s each, before the packet overhead.", None, None),
        (f"Wiring {n} GPUs directly, each pair with its own link, takes {n * (n - 1) // 2} links.",
         f"every pair once: N(N-1)/2 = {n * (n - 1) // 2}.",
         f"Wiring {n} GPUs directly, each pair with its own link, takes {n - 1} links.",
         f"each GPU needs N-1 = {n - 1} ports, but every pair needs a link of its own: N(N-1)/2 = "
         f"{n * (n - 1) // 2}."),
        ("Through NVSwitches every GPU of the server can send to any other at its full NVLink bandwidth, all at once.",
         "the switches are non-blocking: each GPU's links go to the switches, not to one peer.",
         "In a direct mesh every pair of GPUs gets the GPU's whole NVLink bandwidth.",
         "in a mesh a pair has only the links between the two of them, a share of each GPU's links; switches give "
         "any pair all of them."),
    ]
    return wrong_sentence(rng, "NVLink, PCIe and meshes.", claims,
                          params={"n": n, "link": link.name, "pcie": pcie.name})


EXERCISES = (
    Exercise("ch01.topo-legend", "Reading nvidia-smi topo -m's codes", "", 0,
             "nvidia-smi prints the legend under the matrix: SYS, NODE, PHB, PXB, PIX, NV# (chapter 1).",
             _topo_legend, kind="choice"),
    Exercise("ch01.tp-placement", "Where a TP group belongs", "", 0,
             "Which parallelism communicates in every layer, and which once per step? (chapter 1)", _tp_group,
             kind="choice"),
    Exercise("ch01.wrong-sentence", "NVLink, PCIe and meshes: the wrong sentence", "", 0,
             "One direction or both; links of a mesh count pairs (chapter 1).", _mesh_paragraph, kind="choice"),
)
