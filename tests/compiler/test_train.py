"""Training steps: forward, loss, backward and optimizer update as one graph, compiled, lowered and run
on the functional executor; the loss falls over 10 steps (an MLP) and over 5 (an imported CNN, through
the conv gradient rule); `gpusim compile --train`."""

from __future__ import annotations

import json

import numpy as np
import pytest
from onnx import TensorProto, helper

from gpusim.cli.main import main
from gpusim.compiler import CompilerError, evaluate, import_onnx, models, run_pipeline
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


def cnn_onnx(path):
    """x 2x3x8x8 -> Conv 3x3 pad 1 (+ bias) -> Relu -> Conv 3x3 stride 2 (8 - 3 = 5: one row and column
    left unread) -> GlobalAveragePool -> Flatten -> MatMul, written as ONNX. The weights are graph inputs:
    initializers import as constants, which do not train."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["h"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["c"], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["c"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("MatMul", ["f", "wfc"], ["y"])]
    inputs = {"x": [2, 3, 8, 8], "w1": [4, 3, 3, 3], "b1": [4], "w2": [6, 4, 3, 3], "wfc": [6, 5]}
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                             for n, s in inputs.items()],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])])
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return path


def test_conv_weights_start_within_their_fan_in(tmp_path):
    # LeCun's bound 1/sqrt(fan-in): a conv weight M x C/group x kh x kw has C/group * kh * kw inputs an output
    # (27 for w1, 36 for w2), a matrix K x N has K (6 for wfc)
    step = training_step(import_onnx(str(cnn_onnx(tmp_path / "cnn.onnx"))))
    values = initial_values(step)
    for name, fan_in in (("w1", 27), ("w2", 36), ("wfc", 6)):
        bound = 1 / np.sqrt(fan_in)
        assert 0.8 * bound < np.abs(values[name]).max() <= bound, name
    assert not values["b1"].any()


def test_imported_cnn_trains_through_the_conv_gradient(a100, tmp_path):
    model = import_onnx(str(cnn_onnx(tmp_path / "cnn.onnx")))
    report = train(model, a100, cost=AnalyticalCost(), optimizer="sgd", lr=0.1, steps=5)
    losses = report.losses
    assert report.step.weights == ("w1", "b1", "w2", "wfc")
    assert all(b < a for a, b in zip(losses, losses[1:], strict=False))
    assert losses[0] == pytest.approx(float(evaluate(report.step.graph, initial_values(report.step))["loss"]),
                                      rel=1e-5)
    # two forward convolutions; backward: the weight gradients of both and the input gradient of the second
    templates = [(k.template, p) for k, p in zip(report.lowered.kernels, report.phases, strict=True)]
    assert templates.count(("conv", "forward")) == 2 and templates.count(("conv", "backward")) == 3


def test_cnn_sgd_step_on_the_executor_is_weight_minus_lr_times_gradient(a100, tmp_path):
    """The conv gradients' kernels against the numpy evaluator of grad(), through the SGD update."""
    model = import_onnx(str(cnn_onnx(tmp_path / "cnn.onnx")))
    step = training_step(model, optimizer="sgd", lr=0.5)
    values = initial_values(step, seed=3)
    graph, _ = run_pipeline(step.graph)
    out = run_kernels(graph, lower(graph), values, a100)
    forward = model.derive()
    for node in model.topo_order():
        forward.add_node(node)
    target = forward.parameter("target", (2, 5))
    diff = forward.sub(model.outputs["y"], target)
    forward.output(forward.reduce_mean(forward.mul(diff, diff)), "loss")
    grads = evaluate(grad(forward, "loss", step.weights), values)
    for w in step.weights:
        assert np.abs(grads[f"grad_{w}"]).max() > 1e-4, w  # a gradient reaches every weight
        np.testing.assert_allclose(out[f"new_{w}"], values[w] - 0.5 * grads[f"grad_{w}"], rtol=1e-4, atol=1e-6,
                                   err_msg=w)


def test_compile_train_of_an_imported_cnn(tmp_path, capsys):
    out = tmp_path / "train.json"
    assert main(["compile", str(cnn_onnx(tmp_path / "cnn.onnx")), "--train", "--steps", "3",
                 "--json", str(out)]) == 0
    assert "training step on a100: sgd, lr 0.1, weights w1, b1, w2, wfc" in capsys.readouterr().out
    losses = json.loads(out.read_text())["losses"]
    assert len(losses) == 3 and losses[2] < losses[1] < losses[0]


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
