"""Training steps: forward, loss, backward and optimizer update as one graph, compiled, lowered and run
on the functional executor; the loss falls over 10 steps; `gpusim compile --train`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gpusim.cli.main import main
from gpusim.compiler import CompilerError, evaluate, models, run_pipeline
from gpusim.compiler.autodiff import grad
from gpusim.compiler.cost import AnalyticalCost
from gpusim.compiler.lower import lower, run_kernels
from gpusim.compiler.train import initial_values, train, training_step


@pytest.mark.parametrize(("optimizer", "lr", "ratio"), [("sgd", 0.1, 0.95), ("adam", 0.01, 0.2)])
def test_mlp_training_loss_decreases_over_10_simulated_steps(a100, optimizer, lr, ratio):
    report = train(models.mlp2(32, 64, 128, 10), a100, cost=AnalyticalCost(), optimizer=optimizer, lr=lr, steps=10)
    losses = report.losses
    assert len(losses) == 10
    if optimizer == "sgd":  # plain gradient descent with a small step: every step lowers the loss
        assert all(b < a for a, b in zip(losses, losses[1:], strict=False))
    assert losses[-1] < ratio * losses[0]
    # step 1 from the kernels equals the numpy evaluator on the same inputs
    values = initial_values(report.step)
    if optimizer == "adam":
        values["lr_t"] = np.float32(lr * np.sqrt(1 - 0.999) / (1 - 0.9))
    assert losses[0] == pytest.approx(float(evaluate(report.step.graph, values)["loss"]), rel=1e-5)
    totals = report.phase_totals()
    assert all(totals[p][0] > 0 for p in ("forward", "backward", "update"))
    assert sum(n for n, _, _ in totals.values()) == len(report.lowered.kernels)
    assert sum(c for _, c, _ in totals.values()) == pytest.approx(report.lowered.cycles)


def test_sgd_step_is_weight_minus_lr_times_gradient_on_the_executor(a100):
    step = training_step(models.mlp2(8, 4, 8, 3), optimizer="sgd", lr=0.5)
    values = initial_values(step, seed=3)
    graph, _ = run_pipeline(step.graph)
    out = run_kernels(graph, lower(graph), values, a100)
    forward = models.mlp2(8, 4, 8, 3)
    forward.output(forward.reduce_mean(forward.mul(*(2 * [forward.sub(forward.outputs["y"],
                                                                       forward.parameter("target", (8, 3)))]))),
                   "loss")
    grads = evaluate(grad(forward, "loss", step.weights), values)
    for w in step.weights:
        np.testing.assert_allclose(out[f"new_{w}"], values[w] - 0.5 * grads[f"grad_{w}"], rtol=1e-4, atol=1e-6)


def test_phases_split_the_step_graph():
    step = training_step(models.mlp2(4, 3, 5, 2), optimizer="adam", lr=0.01)
    assert step.phase["w1"] == "forward" and step.phase["target"] == "forward"
    assert step.phase["m_w1"] == "update" and step.phase["lr_t"] == "update"
    assert step.phase[step.graph.outputs["loss"]] == "forward"
    assert {step.phase[step.graph.outputs[f"new_{w}"]] for w in step.weights} == {"update"}
    assert step.state == ("m_w1", "v_w1", "m_b1", "v_b1", "m_w2", "v_w2", "m_b2", "v_b2")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"optimizer": "lamb"}, "unknown optimizer 'lamb' (known: sgd, adam)"),
    ({"lr": 0.0}, "learning rate 0.0 is not a positive number"),
    ({"loss": "hinge"}, "unknown loss 'hinge' (known: mse, xent)"),
])
def test_training_step_errors(kwargs, message):
    with pytest.raises(CompilerError, match=message.replace("(", r"\(").replace(")", r"\)")):
        training_step(models.mlp2(4, 3, 5, 2), **kwargs)


def test_compile_train_prints_losses_and_phase_times(tmp_path, capsys):
    out = tmp_path / "train.json"
    assert main(["compile", "mlp2", "--train", "--optimizer", "adam", "--lr", "0.01", "--steps", "3",
                 "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "mlp2 training step on a100: adam, lr 0.01" in text
    for phase in ("forward", "backward", "update", "step"):
        assert f"\n{phase} " in text
    data = json.loads(out.read_text())
    assert len(data["losses"]) == 3 and data["losses"][2] < data["losses"][0]
    assert f"   3  {data['losses'][2]:.6g}" in text
    assert data["step_cycles"] == pytest.approx(sum(p["cycles"] for p in data["phases"].values()))


@pytest.mark.parametrize(("args", "message"), [
    (["mlp2", "--steps", "3"], "--optimizer, --lr and --steps need --train"),
    (["mlp2", "--train", "--tune"], "--train lowers with template defaults; drop --tune"),
    (["mlp2", "--train", "--lr", "-1"], "learning rate -1.0 is not a positive number"),
])
def test_compile_train_errors(capsys, args, message):
    assert main(["compile", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpusim compile: error: ") and message in err
