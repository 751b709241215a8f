"""The subcommands, in the order `gpusim --help` lists them, each with its one-line help: the one table
both the top-level help and each subcommand's own parser read. It imports nothing, so that `gpusim
--help` and `gpusim --version` answer without loading any subcommand (each module `gpusim/cli/<name>_cmd.py`
is imported only when its command is chosen)."""

COMMANDS: dict[str, str] = {
    "run": "simulate a workload (cycles, metrics, bottleneck) and verify it",
    "info": "show a hardware configuration and derived figures",
    "occupancy": "theoretical occupancy (CUDA Occupancy Calculator rules)",
    "asm": "assemble a kernel and print it decoded",
    "list": "list workloads, configs and programs",
    "bench": "measure simulation speed on a fixed suite",
    "sweep": "simulate a workload over launch configurations, configs and config overrides",
    "plot": "charts: occupancy, stalls, units, memory, roofline, sol, sweep, timeline",
    "report": "a self-contained HTML report of a result (gpusim run --json)",
    "step": "one block's warps instruction by instruction: masks, SIMT stack, values",
    "compile": "compile a model to kernels: passes, tuning, time estimates",
    "compare": "latency vs throughput designs over problem sizes, crossovers",
    "program": "streams of copies, kernels and collectives on a node; the sharded transformer layer",
    "validate": "microbenchmarks vs published figures and measurements",
    "exec": "run a whole CUDA program (nvcc -cudart shared), every kernel simulated",
}
