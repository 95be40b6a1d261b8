"""Measured roofs of this machine (live layer; the topology lab and ``commlab doctor``).

* :func:`cpu_copy_sweep`: host memory copy bandwidth, the local roof gloo's numbers are held against;
* :func:`h2d_sweep`, :func:`d2h_sweep`, :func:`d2d_sweep`, :func:`gpu_copy_sweeps`: copies over PCIe (pinned
  and pageable) and inside GPU memory, timed with CUDA events and judged against the PCIe slot;
* :func:`nccl_allreduce`: NCCL all-reduce busbw across this machine's GPUs;
* :func:`doctor_report`: the one-screen summary chapter 00 shows.

Every measurement returns :class:`Skipped` with a reason where it cannot run. Importing this package does
not import torch.
"""
from commlab.measure.allreduce import AllReduceResult, nccl_allreduce, nccl_unavailable_reason
from commlab.measure.cpu import cpu_copy_sweep
from commlab.measure.doctor import DoctorReport, doctor_report
from commlab.measure.gpu import (cuda_unavailable_reason, d2d_sweep, d2h_sweep, gpu_copy_sweeps, h2d_sweep,
                                 host_link_roof)
from commlab.measure.results import CopyPoint, CopySweep, Skipped
from commlab.measure.sweep import QUICK, SweepConfig, best_time_s
from commlab.measure.verdict import Verdict, pcie_roof, verdict

__all__ = ["AllReduceResult", "CopyPoint", "CopySweep", "DoctorReport", "QUICK", "Skipped", "SweepConfig",
           "Verdict", "best_time_s", "cpu_copy_sweep", "cuda_unavailable_reason", "d2d_sweep", "d2h_sweep",
           "doctor_report", "gpu_copy_sweeps", "h2d_sweep", "host_link_roof", "nccl_allreduce",
           "nccl_unavailable_reason", "pcie_roof", "verdict"]
