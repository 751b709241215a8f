"""Stats: metrics in Nsight Compute's names, the report, the bottleneck verdict, traces, and
`simulate()`, which produces them (see docs/stats.md)."""

from gpusim.stats.bottleneck import VERDICTS, Verdict, diagnose
from gpusim.stats.metrics import KERNEL_METRICS, SM_METRICS, kernel_metrics, sm_metrics, timeline_rows
from gpusim.stats.report import CSV_COLUMNS, SimResult
from gpusim.stats.simulate import simulate, timed_execute
from gpusim.stats.trace import trace_dict, trace_events, trace_json, write_trace

__all__ = ["CSV_COLUMNS", "KERNEL_METRICS", "SM_METRICS", "SimResult", "VERDICTS", "Verdict", "diagnose",
           "kernel_metrics", "simulate", "sm_metrics", "timed_execute", "timeline_rows", "trace_dict",
           "trace_events", "trace_json", "write_trace"]
