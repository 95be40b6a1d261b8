"""Chapter 10's self-check list: each item of the source article's list, with the exercises that check it.

The item texts follow the seed article's "Self-check list" word for word (the tests parse the seed and
check that every item is here); the exercise ids point into the bank.
"""
from __future__ import annotations

#: (item of the self-check list, chapter that teaches it, exercise ids that check it)
SELF_CHECK: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("Can state the NVLink 4.0 vs PCIe 5.0 x16 bandwidth comparison (bidirectional 900 GB/s vs 128 GB/s, or "
     "unidirectional 450 GB/s vs 64 GB/s, about 7×), and explain the impact on tensor parallelism", "01",
     ("ch01.link-ratio", "ch01.nvlink-per-gpu", "ch01.move-time", "ch10.tp-cliff")),
    ("Can read nvidia-smi topo -m on an 8-GPU machine and tell which cards use NVLink vs PCIe", "01",
     ("ch10.topo-bandwidth", "ch01.mesh-links")),
    ("Can sketch data flow for AllReduce, AllGather, and ReduceScatter, and state typical uses plus volume "
     "formulas", "04",
     ("ch04.all-gather-sent", "ch04.reduce-scatter-sent", "ch04.all-gather-output", "ch05.ring-volume")),
    ("Can write AllReduce / AllGather / Send/Recv with PyTorch torch.distributed", "03",
     ("ch03.ring-messages", "ch03.one-way", "ch04.all-gather-output")),
    ("Can write the Ring AllReduce volume formula and explain why it is mostly independent of GPU count", "05",
     ("ch05.ring-volume", "ch05.volume-growth", "ch05.naive-vs-ring")),
    ("Can compare Ring vs Tree AllReduce on latency and bandwidth use, and name when each fits", "06",
     ("ch06.tree-steps", "ch06.crossover", "ch06.latency-ratio", "ch06.tree-bandwidth")),
    ("Can explain how DDP buckets implement communication-compute overlap, and the tradeoffs in bucket_cap_mb",
     "07", ("ch07.buckets", "ch07.bucket-time", "ch07.exposed", "ch07.no-overlap")),
    ("Can explain InfiniBand vs RoCE and when each fits", "02",
     ("ch02.ib-port", "ch02.tcp-vs-rdma", "ch10.ib-vs-roce")),
    ("Can measure 8-GPU AllReduce bandwidth with nccl-tests, distinguish algbw vs busbw, and judge whether the "
     "result looks healthy", "08", ("ch08.algbw", "ch08.busbw", "ch08.percent-of-link", "ch10.nccl-health")),
    ("Can debug multi-GPU communication issues with NCCL_DEBUG=INFO and NCCL_ALGO", "08",
     ("ch06.crossover", "ch08.percent-of-link", "ch08.time-from-busbw")),
    ("Can explain from a communication view why TP stays inside a node while PP can cross nodes", "09",
     ("ch09.tp-time", "ch09.pp-send", "ch10.tp-cliff")),
)
