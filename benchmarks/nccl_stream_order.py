"""Show that an NCCL collective returns to Python before its work is done (stream-ordered), unlike gloo.

    python benchmarks/nccl_stream_order.py

On one GPU (NCCL runs a one-rank communicator): a large matrix product is queued on the current stream, then
``dist.all_reduce`` on NCCL. The host returns from ``all_reduce`` (and from ``work.wait()``) long before the GPU
has finished: both only order the CUDA stream (torch's ``Work.wait`` docstring). ``torch.cuda.synchronize()``
is where the host really waits, and CUDA events time what the GPU did. Without a CUDA GPU it prints why it
skipped. Every number printed is measured here.
"""
from __future__ import annotations

import os
import time


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", default=None, metavar="FILE",
                        help="also write the four figures chapter 03 quotes to FILE (gpu_session.sh records them)")
    args = parser.parse_args(argv)
    import torch
    import torch.distributed as dist

    if not torch.cuda.is_available() or not dist.is_nccl_available():
        print(f"nccl_stream_order: skipped (torch {torch.__version__}: CUDA available "
              f"{torch.cuda.is_available()}, NCCL available {dist.is_nccl_available()})")
        return 0
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    x = torch.ones(64 << 20, device="cuda")
    for _ in range(3):  # warm up the matmul and the communicator
        a @ a
        dist.all_reduce(x)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        a @ a                       # about 20 x 1.1 TFLOP queued on the stream
    t0 = time.perf_counter()
    work = dist.all_reduce(x, async_op=True)
    t1 = time.perf_counter()
    work.wait()
    t2 = time.perf_counter()
    end.record()
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    print(f"torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, "
          f"{torch.cuda.get_device_name(0)}")
    print(f"dist.all_reduce(async_op=True) returned after {(t1 - t0) * 1e6:9.1f} us (host)")
    print(f"work.wait() returned after              {(t2 - t1) * 1e6:9.1f} us (host)")
    print(f"torch.cuda.synchronize() returned after {(t3 - t2) * 1e6:9.1f} us (host)")
    print(f"GPU time of the queued work (CUDA events): {start.elapsed_time(end) * 1e3:9.1f} us")
    dist.destroy_process_group()
    if args.json:
        import json

        from commlab.output import write_atomic

        figures = {"async_return_us": round((t1 - t0) * 1e6, 1), "wait_return_us": round((t2 - t1) * 1e6, 1),
                   "synchronize_return_us": round((t3 - t2) * 1e6, 1),
                   "gpu_work_us": round(start.elapsed_time(end) * 1e3, 1)}
        write_atomic(args.json, json.dumps({"figures": figures}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
