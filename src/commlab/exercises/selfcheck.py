"""Chapter 10's self-check list: each item of the source article's list, in our words, with the exercises that
check it.

The items come in the seed article's order (tests/unit/test_exercises_selfcheck.py parses the seed and checks the
pairing item by item); the exercise ids point into the bank.
"""
from __future__ import annotations

#: (what the reader can do, chapter that teaches it, exercise ids that check it), in the seed's order
SELF_CHECK: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Compare NVLink 4 with PCIe 5.0 x16, both directions (900 vs 128 GB/s) and one (450 vs 64 GB/s): about 7x; "
     "and say what the gap means for tensor parallelism", "01",
     ("ch01.link-ratio", "ch01.nvlink-per-gpu", "ch01.move-time", "ch10.tp-cliff")),
    ("Read `nvidia-smi topo -m` from an 8-GPU server and say which GPU pairs talk over NVLink and which over PCIe",
     "01", ("ch10.topo-bandwidth", "ch01.mesh-links", "ch01.topo-legend")),
    ("Draw how data moves in AllReduce, AllGather and ReduceScatter, name where each is used, and give the bytes "
     "each rank sends", "04",
     ("ch04.all-gather-sent", "ch04.reduce-scatter-sent", "ch04.all-gather-output", "ch05.ring-volume",
      "ch04.which-collective")),
    ("Write AllReduce, AllGather and a Send/Recv exchange with `torch.distributed`", "03",
     ("ch03.ring-messages", "ch03.one-way", "ch04.all-gather-output", "ch03.deadlock")),
    ("Give the per-rank volume of a ring AllReduce, 2(N-1)/N x S, and explain why it barely grows with the number "
     "of GPUs", "05", ("ch05.ring-volume", "ch05.volume-growth", "ch05.naive-vs-ring", "ch05.n-doubles")),
    ("Weigh ring against tree AllReduce on latency and on bandwidth, and say which fits where", "06",
     ("ch06.tree-steps", "ch06.crossover", "ch06.latency-ratio", "ch06.tree-bandwidth", "ch06.which-curve")),
    ("Explain how DDP's gradient buckets let communication run during the backward pass, and what `bucket_cap_mb` "
     "trades off", "07", ("ch07.buckets", "ch07.bucket-time", "ch07.exposed", "ch07.no-overlap", "ch07.exposed-tail")),
    ("Contrast InfiniBand with RoCE v2 and say when to choose each", "02",
     ("ch02.ib-port", "ch02.tcp-vs-rdma", "ch10.ib-vs-roce")),
    ("Measure an 8-GPU AllReduce with nccl-tests, tell algbw from busbw, and judge whether the numbers are healthy",
     "08", ("ch08.algbw", "ch08.busbw", "ch08.percent-of-link", "ch10.nccl-health")),
    ("Track down a multi-GPU communication problem with `NCCL_DEBUG=INFO` and `NCCL_ALGO`", "08",
     ("ch08.debug-log", "ch06.crossover", "ch08.percent-of-link")),
    ("Argue from the traffic why tensor parallelism stays inside a node while pipeline parallelism can span nodes",
     "09", ("ch09.tp-time", "ch09.pp-send", "ch10.tp-cliff")),
)

#: a word that the seed's item and ours share, item by item (the test checks the pairing with it)
SEED_KEYWORDS = ("NVLink", "topo", "ReduceScatter", "torch.distributed", "volume", "Tree", "bucket", "RoCE",
                 "nccl-tests", "NCCL_DEBUG", "node")

#: the labs that practise each item, in SELF_CHECK's order (notebooks under labs/; their checks run the reader's
#: own code: the p2p lab the send/recv exchange, the collectives lab every collective against its reference, the
#: ring lab the reader's AllReduce, AllGather and ReduceScatter against dist.all_reduce)
SELF_CHECK_LABS: tuple[tuple[str, ...], ...] = (
    ("topology",),
    ("topology",),
    ("collectives",),
    ("p2p", "collectives", "build_your_own_ring"),
    ("build_your_own_ring",),
    ("ring_vs_tree",),
    ("ddp_overlap", "ddp_zero"),
    (),
    ("bandwidth_sweep",),
    ("nccl_debug_multinode",),
    ("topology",),
)

#: What the book teaches beyond the article's list, in the same form (item, chapter, exercise ids) and each with
#: the labs that practise it: chapter 11 (a job at scale) and the find-the-hang lab. An item may have no
#: exercise when its lab's check is what checks it (find-the-hang grades the reader's own function).
BEYOND_THE_LIST: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("Say what a collective costs a job at scale: a ring's latency across nodes, an all-to-all above an "
     "oversubscribed leaf, what in-network reduction saves, one slow NIC, and the hours between failures",
     "11", ("ch11.ring-latency", "ch11.oversubscribed-all-to-all", "ch11.sharp-saving", "ch11.slow-nic",
            "ch11.interruptions"), ()),
    ("Find a hang: stop it with a timeout, read which rank waits in which call from the launcher's report and "
     "each rank's Flight Recorder, and name the rank and the call to look at", "03", (), ("find_the_hang",)),
)
