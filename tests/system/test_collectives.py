"""Ring collectives simulated on the links against the alpha-beta cost model, with alpha and beta derived
by hand from the configs:

- dgx_a100 (NVSwitch): beta = 12 links x 50 GB/s / 2 (one way) x 0.8 = 240 GB/s, alpha = 1 us;
- a100x4_ring (NVLink ring): 6 links to each neighbour: beta = 6 x 25 x 0.8 = 120 GB/s, alpha = 1 us;
- a100x8_pcie (PCIe through host memory): each of the 8 hops crosses host memory twice, so beta =
  min(31.5 x 0.83, 204.8 / 16) = 12.8 GB/s; alpha = two PCIe latencies = 2 us.
"""

import pytest
import simpy

from gpusim.config import load_config
from gpusim.system import Collective, CopyP2P, Kernel, Program, Topology, run_program, simulate_collective

MIB64 = 64 * 2**20
CASES = {"dgx_a100": (8, 1e-6, 240e9), "a100x4_ring": (4, 1e-6, 120e9), "a100x8_pcie": (8, 2e-6, 12.8e9)}


@pytest.fixture(scope="module", params=list(CASES))
def system(request):
    return request.param, load_config(request.param)


def test_all_reduce_matches_the_formula_and_moves_2_n_minus_1_over_n(system):
    name, cfg = system
    n, alpha, beta = CASES[name]
    r = simulate_collective(cfg, "all_reduce", MIB64)
    formula = 2 * (n - 1) * (alpha + MIB64 / n / beta)
    assert r.formula_seconds == pytest.approx(formula, rel=1e-6)
    assert r.alpha_seconds == pytest.approx(alpha) and r.beta_bytes_per_second == pytest.approx(beta)
    assert r.seconds == pytest.approx(formula, rel=0.02)
    assert set(r.bytes_sent.values()) == {2 * (n - 1) * MIB64 // n}


@pytest.mark.parametrize("kind", ["all_gather", "reduce_scatter"])
def test_half_collectives_take_n_minus_1_steps(system, kind):
    name, cfg = system
    n, alpha, beta = CASES[name]
    r = simulate_collective(cfg, kind, MIB64)
    assert r.seconds == pytest.approx((n - 1) * (alpha + MIB64 / n / beta), rel=0.02)
    assert set(r.bytes_sent.values()) == {(n - 1) * MIB64 // n}


def test_broadcast_pipelines_chunks_along_the_chain():
    cfg = load_config("dgx_a100")
    c = cfg.system.chunk_bytes
    r = simulate_collective(cfg, "broadcast", MIB64, root=3)
    assert r.seconds == pytest.approx(7 * (1e-6 + c / 240e9) + (MIB64 - c) / 240e9, rel=1e-6)
    assert r.bytes_sent[3] == MIB64 and sorted(r.bytes_sent.values()) == [0] + [MIB64] * 7


def test_uneven_split_counts_every_byte():
    r = simulate_collective(load_config("dgx_a100"), "all_reduce", 1001, gpus=(0, 1, 2))
    # segments 334, 334, 333: each GPU sends all but one segment in each half
    assert sorted(r.bytes_sent.values()) == [1001 - 334 + 1001 - 334, 1001 - 334 + 1001 - 333,
                                             1001 - 333 + 1001 - 334]


def test_ring_topology_falls_back_to_pcie_for_non_neighbours():
    env_cfg = load_config("a100x4_ring")
    topo = Topology(simpy.Environment(), env_cfg)
    assert [topo.route_name(0, d) for d in (1, 2, 3)] == ["NVLink", "PCIe via host memory", "NVLink"]
    # a peer copy to the opposite GPU: D2H, host memory twice, H2D in 128 KiB chunks; PCIe is the slowest
    # stage (26.145 GB/s), so 512 chunks of it plus one chunk through each faster stage, plus 2 latencies
    c = env_cfg.system.chunk_bytes
    far = run_program(Program((CopyP2P(bytes=MIB64, peer=2),)), env_cfg).seconds
    assert far == pytest.approx(2e-6 + MIB64 / 26.145e9 + c / 26.145e9 + 2 * c / 204.8e9, rel=1e-6)
    near = run_program(Program((CopyP2P(bytes=MIB64, peer=1),)), env_cfg).seconds
    assert near == pytest.approx(1e-6 + MIB64 / 120e9, rel=1e-6)


def test_collective_in_a_program_waits_for_every_member():
    cfg = load_config("dgx_a100")
    ops = (Kernel(cycles=1_410_000, gpu=0), Collective(collective="all_reduce", bytes=MIB64, gpus=(0, 1)),
           Collective(collective="all_reduce", bytes=MIB64, gpus=(0, 1)))
    report = run_program(Program(ops), cfg)
    first = [r for r in report.records if r.index == 1]
    # GPU 0's stream reaches it after its 1 ms kernel (issued after one 4 us launch)
    assert [r.start for r in first] == [pytest.approx(4e-6 + 1e-3)] * 2
    one = 2 * (1e-6 + MIB64 / 2 / 240e9)
    assert report.seconds == pytest.approx(4e-6 + 1e-3 + 2 * one, rel=1e-6)
    assert report.busy(1)["communication"] == pytest.approx(2 * one, rel=1e-6)
