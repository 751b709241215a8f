"""`gpusim compile --objective energy` (issue 39): the tuner minimises the energy the power model gives a
kernel's counted work over the cost model's cycles (compiler/cost/energy.py). On the transformer's
fused matmul, candidates tie in time (latency-bound: one warp's chain sets the cycles) and the energy
objective takes the larger tile: fewer blocks, fewer SMs powered, fewer redundant loads through the L2."""

import pytest

from gpusim.cli.main import main
from gpusim.compiler.cost import AnalyticalCost
from gpusim.compiler.cost.energy import kernel_energy, work_activity
from gpusim.compiler.cost.fusion import cost_based_fusion
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.lower import lower_node
from gpusim.compiler.models import build
from gpusim.compiler.passes.manager import run_pipeline
from gpusim.compiler.tune import Tuner
from gpusim.config import load_config


@pytest.fixture(scope="module")
def transformer():
    cfg = load_config("a100")
    graph, _ = run_pipeline(build("transformer"), should_fuse=cost_based_fusion(AnalyticalCost(), cfg))
    return cfg, graph, next(n for n in graph.topo_order() if n.name == "19")


def test_the_energy_objective_picks_a_larger_tile_at_the_same_cycles_and_less_energy(transformer):
    cfg, graph, node = transformer
    cost = AnalyticalCost()
    picks = {o: Tuner(cfg, cost, cache=False, objective=o).tune_node(graph, node) for o in ("time", "energy")}
    assert picks["time"].params != picks["energy"].params
    assert picks["energy"].objective == "energy" and picks["time"].objective == "time"
    kernels = {o: lower_node(graph, node, r.params, cfg) for o, r in picks.items()}
    est = {o: cost.cost(k, cfg) for o, k in kernels.items()}
    energy = {o: kernel_energy(kernels[o], cfg, est[o]) for o in kernels}
    assert est["energy"].cycles <= est["time"].cycles * 1.01  # no slower (a tie, within the tuner's 1 %)
    assert energy["energy"] < 0.995 * energy["time"]  # 407.5 against 410.2 uJ, launch included
    assert picks["energy"].cycles == pytest.approx(energy["energy"])  # the energy objective's score is joules
    assert kernels["energy"].launch.num_blocks < kernels["time"].launch.num_blocks


def test_the_energy_is_the_power_models_coefficients_times_the_counted_work(transformer):
    """Every term by hand for the fused matmul on a100 at 1410 MHz (V = Vmax: no voltage scaling)."""
    cfg, graph, node = transformer
    k = lower_node(graph, node, {"BM": 32, "BN": 16, "BK": 32, "TM": 1, "TN": 1, "use_shared": False}, cfg)
    e = AnalyticalCost().cost(k, cfg)
    pw, w, launch = cfg.power, k.work, k.launch
    threads = launch.num_blocks * launch.threads_per_block
    warps = launch.num_blocks * launch.warps_per_block(32)
    per_thread = sum(w.instructions.values())
    lanes = {"FP32": pw.fp32_op_pj, "INT": pw.int_op_pj, "LDST": pw.control_op_pj, "BRANCH": pw.control_op_pj,
             "SYNC": pw.control_op_pj, "FP64": pw.fp64_op_pj, "SFU": pw.sfu_op_pj}
    to_l2 = w.unique_load_bytes + w.store_bytes  # a100's L1 caches global loads
    pj = (warps * per_thread * pw.instruction_pj + threads * per_thread * pw.register_file_pj
          + sum(threads * n * lanes[u] for u, n in w.instructions.items())
          + (w.load_bytes + w.store_bytes) / 32 * pw.l1_sector_pj + warps * w.shared_trips * pw.shared_wavefront_pj
          + to_l2 / 32 * (pw.noc_sector_pj + pw.l2_sector_pj) + 8 * w.dram_bytes * pw.dram_pj_per_bit)
    seconds = e.cycles / 1.41e9
    static = (pw.sm_static_w * min(108, launch.num_blocks) * e.kernel_cycles / 1.41e9
              + (pw.uncore_static_w + pw.memory_static_w + pw.constant_w) * seconds)
    assert kernel_energy(k, cfg, e) == pytest.approx(pj * 1e-12 + static, rel=1e-3)  # (counts rounded)
    act = work_activity(k, cfg, e.cycles, e.kernel_cycles)
    assert act.warp_instructions == round(warps * per_thread) and act.l2_sectors == round(to_l2 / 32)


def test_the_objective_is_refused_without_a_power_model_or_without_tune(capsys):
    with pytest.raises(CompilerError, match="--objective energy: gtx980 has no power model"):
        Tuner(load_config("gtx980"), AnalyticalCost(), objective="energy")
    assert main(["compile", "mlp2", "--objective", "energy"]) != 0
    assert "--objective need --tune" in capsys.readouterr().err


def test_the_cli_reports_the_energy_it_minimised(tmp_path, capsys):
    assert main(["compile", "transformer", "--tune", "--objective", "energy", "--cache-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "minimising energy)" in out
    assert "energy              optimised " in out and "tuned for --objective energy" in out
    assert "BM=32 BN=16 BK=32 TM=1 TN=1 use_shared=0" in out
