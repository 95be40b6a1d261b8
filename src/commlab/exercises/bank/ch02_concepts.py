"""Chapter 2, understanding: bits and bytes in a health check, why RDMA is fast, oversubscribed leaves."""
from __future__ import annotations

from commlab import units
from commlab.exercises.bank.common import num, pick
from commlab.exercises.model import Choice, Exercise, Worked, choice_worked
from commlab.fabric import LeafSpine


def _gbps_trap(rng) -> Worked:
    from commlab.nccl.summary import HEALTHY_RATIO      # the book's health threshold (chapter 8)

    nic_Gbps = int(pick(rng, (100, 200, 400, 800)))
    share = float(pick(rng, (0.45, 0.8, 0.9, 0.95)))
    port_GBps = nic_Gbps / units.BITS_PER_BYTE
    busbw_GBps = round(share * port_GBps, 1)
    right_share = busbw_GBps / port_GBps
    wrong_share = busbw_GBps / nic_Gbps
    healthy = right_share >= HEALTHY_RATIO
    stem = (f"Two nodes, one {nic_Gbps} Gb/s InfiniBand NIC each, run nccl-tests' all_reduce_perf; at 1 GiB it "
            f"reports busbw {num(busbw_GBps)} GB/s. What do you conclude?")
    verdict = ("a healthy run" if healthy else
               f"below the {HEALTHY_RATIO:.0%} a healthy run reaches: worth a look")
    right = Choice(f"{num(100 * right_share, 3)}% of the port's {num(port_GBps)} GB/s: {verdict}",
                   f"{nic_Gbps} Gb/s / 8 bits per byte = {num(port_GBps)} GB/s one way; busbw is comparable with "
                   "one direction of the link.")
    wrong = [Choice(f"{num(100 * wrong_share, 3)}% of the link: something is badly wrong",
                    f"that divides GB/s by Gb/s: {nic_Gbps} Gb/s is {num(port_GBps)} GB/s (8 bits per byte)."),
             Choice(f"{num(100 * busbw_GBps / (2 * port_GBps), 3)}% of the link's {num(2 * port_GBps)} GB/s",
                    "busbw compares with one direction of the link; adding both directions halves the share."),
             Choice("Nothing: busbw cannot be compared with a NIC's speed",
                    "nccl-tests defines busbw so that it compares with the link's one-way bandwidth at any N.")]
    solution = (f"{nic_Gbps} Gb/s = {num(port_GBps)} GB/s; {num(busbw_GBps)} / {num(port_GBps)} = "
                f"{num(100 * right_share, 3)}% (chapter 8 calls {HEALTHY_RATIO:.0%} and more of the link healthy).")
    return choice_worked(rng, stem, right, wrong, solution, params={"nic_Gbps": nic_Gbps, "busbw": busbw_GBps})


def _rdma_why(rng) -> Worked:
    size = pick(rng, ("8-byte", "4 KB", "64 KB"))
    stem = (f"On the same 100 Gb/s Ethernet wire, a {size} message takes a few microseconds with RDMA (RoCE) and "
            "several times as long through TCP sockets. Where does the difference come from?")
    right = Choice("RDMA's NIC reads and writes the application's memory itself: no system call and no copy "
                   "through the kernel's socket buffers on either side",
                   "the NIC does the transport; the CPU only posts a work request (chapter 2's TCP vs RDMA).")
    wrong = [Choice("RDMA signals faster on the wire",
                    "it is the same wire at the same line rate; the time goes in the host software, not on the wire."),
             Choice("TCP opens a connection for every message",
                    "a TCP connection is set up once and reused; the per-message cost is the kernel path and copies."),
             Choice("RDMA compresses the data",
                    "RDMA moves the bytes as they are; for a small message there is nothing to compress anyway.")]
    return choice_worked(rng, stem, right, wrong, "The kernel's network stack and its copies are skipped: kernel "
                         "bypass and zero copy.", params={"size": size})


def _oversubscribed(rng) -> Worked:
    radix = 64
    down = int(pick(rng, (32, 40, 48, 56)))
    fabric = LeafSpine(radix=radix, down=down, leaves=8)
    ratio = fabric.oversubscription
    per_host = 1 / max(1.0, ratio)
    stem = (f"A leaf switch of {radix} ports has {down} ports down to hosts and {fabric.up} up to the spines, all at "
            "the same speed. Every host under it sends at full speed to hosts under other leaves (an all-to-all "
            "across the fabric). What share of its port speed can each host keep?")
    right = Choice(f"About {num(100 * per_host, 3)}%: {down} ports of traffic share {fabric.up} uplinks "
                   f"({num(ratio, 3)}:1 oversubscribed)",
                   f"down / up = {down}/{fabric.up}: the uplinks carry 1/{num(ratio, 3)} of what the hosts offer.")
    wrong = [Choice("100%: a leaf-spine fabric is non-blocking",
                    f"only when up >= down; here {down} > {fabric.up}, so the leaf is oversubscribed."),
             Choice(f"About {num(100 * fabric.up / radix, 3)}%: the uplinks' share of the switch's ports",
                    "the share is uplinks over host ports (down), not over all ports."),
             Choice("It depends only on the spines' speed",
                    "with equal port speeds the limit is the count of uplinks against host ports.")]
    return choice_worked(rng, stem, right, wrong, f"Oversubscription = down/up = {down}/{fabric.up} = "
                         f"{num(ratio, 3)}; each host keeps 1/{num(ratio, 3)} = {num(100 * per_host, 3)}%.",
                         params={"down": down})


EXERCISES = (
    Exercise("ch02.busbw-gbps", "Bits and bytes in a health check", "", 0,
             "A NIC's speed is in bits per second; busbw in bytes (chapter 2, Gb/s or GB/s).", _gbps_trap,
             kind="choice"),
    Exercise("ch02.rdma-why", "Why RDMA is fast for small messages", "", 0,
             "Follow a message from the application to the wire: who copies it, who runs the transport? (chapter 2)",
             _rdma_why, kind="choice"),
    Exercise("ch02.oversubscribed", "An oversubscribed leaf", "", 0,
             "Compare the bandwidth into the leaf with the bandwidth out of it (chapter 2, fat trees).",
             _oversubscribed, kind="choice"),
)
