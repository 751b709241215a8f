"""`gpusim exec`: a whole CUDA application, host code and all, run with every kernel simulated (docs/exec.md).

The application (built with `nvcc -cudart shared`) loads gpusim's CUDA runtime (shim/cudart.c, built on
first use: shim.py) instead of NVIDIA's; its calls come to a Session (session.py) over a socket (protocol.py);
device memory is one address space both processes map (memory.py); kernels come from the fat binary's PTX
(fatbin.py, modules.py) and run on the timing model; copies, kernels and events make the program's timeline
on the system model (timeline.py)."""

from gpusim.exec.run import ExecResult, run_app, write_trace
from gpusim.exec.shim import ExecError, include_dir, shim_dir

__all__ = ["ExecError", "ExecResult", "include_dir", "run_app", "shim_dir", "write_trace"]
