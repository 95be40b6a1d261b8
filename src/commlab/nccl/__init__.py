"""nccl-tests logs and NCCL itself, without a GPU: read and write nccl-tests tables, judge a run against a
link, list the environment variables NCCL and torch read, and read NCCL_DEBUG=INFO logs.

>>> from commlab.nccl import Row, Measure, format_row
>>> format_row(Row(1024, 256, "float", "sum", -1, Measure(16.43, 0.06, 0.11, 0), Measure(15.61, 0.07, 0.11, 0)))
'        1024           256     float     sum      -1    16.43    0.06    0.11      0    15.61    0.07    0.11      0'
"""
from commlab.nccl.debuglog import Connection, DebugLog, TreeNode, read_debug_log
from commlab.nccl.env import EnvVar, catalogue, lookup, names
from commlab.nccl.env import TorchNameReport, check_torch_names, torch_version
from commlab.nccl.examples import FixtureRoof, debug_logs, fixture_link, fixture_roof, nccl_tests_log, nccl_tests_logs
from commlab.nccl.format import avg_busbw_GBps, format_row, format_table
from commlab.nccl.parse import NcclTestsLog, parse_log
from commlab.nccl.records import Measure, Row
from commlab.nccl.summary import Summary, Verdict, half_peak_size_bytes, peak_busbw_GBps, summarize, verdict

__all__ = [
    "Measure", "Row", "NcclTestsLog", "parse_log", "format_table", "format_row", "avg_busbw_GBps",
    "Summary", "Verdict", "summarize", "verdict", "peak_busbw_GBps", "half_peak_size_bytes",
    "EnvVar", "catalogue", "lookup", "names", "TorchNameReport", "check_torch_names", "torch_version",
    "DebugLog", "Connection", "TreeNode", "read_debug_log",
    "nccl_tests_logs", "nccl_tests_log", "debug_logs", "FixtureRoof", "fixture_roof", "fixture_link",
]
