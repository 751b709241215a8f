"""`gpusim compile MODEL`: a model through the compiler — the pass pipeline (fusion decided by a cost
model), kernels lowered from templates (tuned with --tune), each kernel's estimated time, and the
speed-up over the unoptimised graph."""

from __future__ import annotations

import argparse
from pathlib import Path

import gpusim
from gpusim.cli.args import (
    add_config,
    add_config_set,
    add_json,
    add_metric,
    add_output,
    add_params,
    add_quiet,
    integer,
)
from gpusim.cli.commands import COMMANDS
from gpusim.cli.common import add_executor_args, emit_json, make_executor, parse_sets

# The compiler's choices and defaults as --help shows them, spelled here so that `gpusim compile --help`
# imports no layer (the compiler's modules import the timing engine); tests/cli/test_startup.py checks
# each against the tuple the compiler uses.
BUILTIN = ("mlp2", "attention", "transformer", "recommender")  # gpusim.compiler.models.BUILTIN
MODELS = ("analytical", "calibrated", "simulated")  # gpusim.compiler.cost.MODELS
STRATEGIES = ("grid", "local", "anneal")  # gpusim.compiler.tune.STRATEGIES
PARALLEL = ("tensor", "data")  # gpusim.compiler.shard.STRATEGIES
PRECISIONS = ("f16", "bf16", "int8")  # gpusim.compiler.passes.precision.PRECISIONS
OPTIMIZERS = ("sgd", "adam")  # gpusim.compiler.train.OPTIMIZERS
SAMPLE_MODES = ("auto", "on", "off")  # gpusim.analysis.sampling.SAMPLE_MODES
# gpusim.compiler.accuracy.TOLERANCES: per precision, the largest relative error and the smallest cosine
TOLERANCES = {"f16": (1e-2, 0.9999), "bf16": (5e-2, 0.999), "int8": (1e-1, 0.99)}


def register(subparsers) -> None:
    p = subparsers.add_parser("compile", help=COMMANDS["compile"],
                              description="Compile MODEL for CONFIG: run the graph passes (fusion decided by the "
                                          "cost model), lower every node to a kernel of the ISA, optionally tune "
                                          "each kernel's template parameters, and print the kernels with their "
                                          "estimated times and the speed-up over the unoptimised graph "
                                          "(docs/compiler.md).")
    p.add_argument("model", nargs="?",
                   help=f"a built-in model ({', '.join(BUILTIN)}), a .py file defining build(**sizes) -> "
                                 "Graph, or a .onnx file")
    add_config(p)
    add_config_set(p)
    add_params(p, help="a model size, e.g. --set seq=64 (repeatable; built-in and .py models)")
    p.add_argument("--shape", action="append", metavar="INPUT=D0,D1,...", dest="shapes",
                   help="static shape of an ONNX input with symbolic dimensions (repeatable)")
    p.add_argument("--dtype", choices=("f32", "f16"), help="element type of a built-in model (default f32)")
    p.add_argument("--cost", choices=MODELS, default="analytical",
                   help="cost model for the estimates, fusion decisions and tuning (default analytical)")
    p.add_argument("--tune", action="store_true", help="search each kernel's template parameters")
    add_metric(p, flag="--objective",
               help="with --tune: what the tuner minimises, each candidate's cycles (time, the default) or its energy "
                    "over them (energy: the config's power model on the kernel's counted work; a100, h200)")
    p.add_argument("--search", choices=STRATEGIES, default="local",
                   help="search strategy: local (random + local refinement, default), grid (every point) or anneal "
                        "(simulated annealing with restarts)")
    p.add_argument("--budget", type=integer(1, 100_000), default=48,
                   help="candidates a local search scores per kernel (default 48)")
    p.add_argument("--search-cost", choices=MODELS,
                   help="model scoring every candidate of the search (default: --cost); the --top-k best are then "
                        "scored by --cost, which picks")
    p.add_argument("--top-k", type=integer(1, 100_000), default=3, help="candidates re-scored by --cost (default 3)")
    p.add_argument("--sample", choices=SAMPLE_MODES, default="auto",
                   help="the simulated model: sample kernels of more than 2,000,000 warp instructions (auto, "
                        "default), every kernel that can be (on), or none (off); docs/sampling.md")
    p.add_argument("--sample-budget", type=integer(1, 2**62), metavar="N",
                   help="the simulated model: at most N warp instructions simulated per sampled kernel")
    add_executor_args(p, "the simulated model's candidates")
    add_output(p, "--cache-dir", kind="folder", help="cache of simulated costs and tuned configurations "
                                       "(default $GPUSIM_CACHE_DIR or ~/.cache/gpusim)")
    add_json(p, help="write the report as JSON to FILE ('-' or no FILE: stdout)")
    add_quiet(p)
    _add_issue26_flags(p)
    # issue 25's rewrite, search and output flags
    p.add_argument("--tie-break", choices=MODELS,
                   help="with --tune: candidates within 1%% of the best by the search model are scored again by this "
                        "model (e.g. simulated), which picks among them")
    p.add_argument("--refit", nargs="?", const=REFIT_DEFAULT, metavar="FILE",
                   help="with --tune: refit the calibrated model from the simulations the tuner ran and write it to "
                        "FILE (default: calibration.json in the cache folder), starting from FILE's calibration if "
                        "it exists, else the shipped one (which is never written); use it with --calibration FILE")
    p.add_argument("--calibration", metavar="FILE",
                   help="the calibrated model's coefficients from FILE (one --refit wrote) instead of the shipped "
                        "ones, wherever the calibrated model is used (--cost, --search-cost, --tie-break)")
    add_output(p, "--save-onnx", metavar="OUT.onnx", help="write the optimised graph as ONNX (standard operators; "
                                                         "fused kernels as their decomposition)")
    add_output(p, "--report", nargs="?", const="-", metavar="FILE",
               help="per kernel: fused operators, tile, simulated cycles and bottleneck (text table to FILE, "
                    "default stdout; in the JSON as 'report')")
    _add_precision(p)
    p.add_argument("--onnx-suite", action="store_true",
                   help="instead of MODEL: walk the onnx package's backend-test models (real, simple, pytorch-*), "
                        "compile each, run it on the functional executor and compare with its shipped outputs")
    _add_train_args(p)
    p.set_defaults(func=run)


def _add_train_args(p) -> None:
    """--train and its options (issue 26): a training step compiled, lowered and run (gpusim.compiler.train)."""
    group = p.add_argument_group("training (--train)")
    group.add_argument("--train", action="store_true",
                       help="compile MODEL's training step (forward, MSE loss against a random target, backward, "
                            "optimizer update), run --steps steps of its kernels on the functional executor and "
                            "print each step's loss and the simulated time of forward, backward and update")
    group.add_argument("--optimizer", choices=OPTIMIZERS, help="update rule (default sgd)")
    group.add_argument("--lr", type=float, help="learning rate (default 0.1)")
    group.add_argument("--steps", type=integer(1, 10_000), help="training steps to run (default 10)")


def _train(args: argparse.Namespace, cfg, graph, cost) -> int:
    from gpusim.compiler.errors import CompilerError
    from gpusim.compiler.train import train

    if args.tune:
        raise CompilerError("--train lowers with template defaults; drop --tune")
    report = train(graph, cfg, cost=cost, steps=args.steps or 10, optimizer=args.optimizer or "sgd",
                   lr=0.1 if args.lr is None else args.lr)
    if args.json != "-":
        print(report)
    emit_json(report.to_dict(), args.json)
    return 0


def run(args: argparse.Namespace) -> int:
    from gpusim.compiler.accuracy import random_inputs
    from gpusim.compiler.driver import compile_graph, load_model
    from gpusim.compiler.errors import CompilerError
    from gpusim.compiler.memplan import plan_memory
    from gpusim.compiler.passes.precision import convert
    from gpusim.compiler.tune import Tuner

    if args.onnx_suite:
        return _onnx_suite(args)
    if args.model is None:
        raise CompilerError("give a MODEL, or --onnx-suite")
    if (args.search_cost or args.search != "local" or args.tie_break or args.refit is not None
            or args.objective != "time") and not args.tune:
        raise CompilerError("--search, --search-cost, --tie-break, --refit and --objective need --tune")
    if args.dtype is not None and args.model not in BUILTIN:
        raise CompilerError(f"--dtype applies to the built-in models ({', '.join(BUILTIN)})")
    _check_issue26_flags(args)
    _check_precision(args)
    cfg = gpusim.load_config(args.config, overrides=_node_overrides(args) or None)
    graph = load_model(args.model, sizes=parse_sets(args.sets), dtype=args.dtype or "f32",
                       shapes=_shapes(args.shapes))
    executor = make_executor(args)
    sampling = {"sample": args.sample, "sample_budget": args.sample_budget}
    cost = _cost_model(args.cost, args, sampling)
    if args.verify:
        return _verify(args, graph, cfg, cost)
    if args.precision:
        graph = convert(graph, args.precision, calibration=random_inputs(graph, 1)).graph
    if args.train:
        return _train(args, cfg, graph, cost)
    if args.optimizer or args.lr is not None or args.steps:
        raise CompilerError("--optimizer, --lr and --steps need --train")
    if args.shard or args.place:
        return _shard_or_place(args, graph, cfg, cost)
    tuner = None
    if args.tune:
        search = (cost if args.search_cost in (None, args.cost)
                  else _cost_model(args.search_cost, args, sampling))
        tie_break = (None if args.tie_break is None else _cost_model(args.tie_break, args, sampling))
        tuner = Tuner(cfg, search, strategy=args.search, budget=args.budget, top_k=args.top_k,
                      measure=None if search is cost else cost, cache_dir=args.cache_dir, executor=executor,
                      tie_break=tie_break, objective=args.objective)
    report = compile_graph(graph, cfg, cost=cost, tuner=tuner)
    if args.json != "-":
        print(report)
    out = report.to_dict()
    if args.plan_memory:
        plan = plan_memory(report.optimised.graph, report.optimised.kernels)
        out["memory_plan"] = plan.to_dict()
        if args.json != "-":
            print(plan.summary())
    _outputs(args, report, cfg, tuner, out, _cost_model("simulated", args, sampling))
    emit_json(out, args.json)
    return 0


REFIT_DEFAULT = "<cache>/calibration.json"  # --refit without FILE


def refit_path(args: argparse.Namespace) -> Path | None:
    """Where --refit writes: FILE, or calibration.json in --cache-dir; None for Tuner.refit's default
    (calibration.json in gpusim's cache folder). Tuner.refit refuses the installed package's file."""
    if args.refit != REFIT_DEFAULT:
        return Path(args.refit)
    return Path(args.cache_dir) / "calibration.json" if args.cache_dir else None


def _cost_model(name: str, args: argparse.Namespace, sampling: dict):
    """The cost model `name`; the calibrated one with --calibration's coefficients where given."""
    from gpusim.compiler.cost import make_cost_model

    if name == "calibrated" and args.calibration:
        from gpusim.compiler.cost import CalibratedCost, Calibration

        return CalibratedCost(Calibration.load(args.calibration))
    return make_cost_model(name, args.cache_dir, **sampling)


def _outputs(args: argparse.Namespace, report, cfg, tuner, out: dict, sim) -> None:
    """--refit, --save-onnx and --report (issue 25)."""
    from gpusim.compiler.kernel_report import format_rows, kernel_rows
    from gpusim.compiler.onnx_export import save_onnx

    if args.tie_break and args.json != "-":
        for name, r in report.tuned.items():
            if r.tied:
                cycles = ", ".join(f"{c:,.0f}" for _, c in sorted(r.tied, key=lambda pc: pc[1]))
                print(f"%{name}: {len(r.tied)} candidates within 1% by {tuner.cost.name}; by {args.tie_break}: "
                      f"{cycles} cycles (launch included)")
    if args.refit is not None:
        from gpusim.compiler.tune import refit_file

        path = refit_file(refit_path(args))
        refitted = tuner.refit(path)
        out["refit"] = {"coefficients": list(refitted.coefficients), "kernels": len(tuner.simulations),
                        "file": str(path)}
        if args.json != "-":
            print(f"calibrated model refitted from {len(tuner.simulations)} simulated kernels: "
                  f"{', '.join(f'{c:.4g}' for c in refitted.coefficients)}; written to {path} "
                  f"(use it with --calibration {path})")
    if args.save_onnx:
        save_onnx(report.optimised.graph, args.save_onnx)
        if args.json != "-":
            print(f"optimised graph written as ONNX to {args.save_onnx}")
    if args.report:
        rows = kernel_rows(report, cfg, sim)
        out["report"] = rows
        if args.report != "-":
            with open(args.report, "w") as f:
                f.write(format_rows(rows) + "\n")
        elif args.json != "-":
            print()
            print(format_rows(rows))


# --- --precision and --verify (docs/compiler.md, "Precision") ----------------------------------------

def _add_precision(p: argparse.ArgumentParser) -> None:
    p.add_argument("--precision", choices=PRECISIONS,
                   help="convert the f32 model first: f16 or bf16 (reductions kept in f32), or int8 linear layers "
                        "(scales calibrated on random inputs)")
    p.add_argument("--verify", action="store_true",
                   help="with --precision: run the converted kernels on the functional executor and print each "
                        "output's error against the f32 reference, and the cycles of both")
    p.add_argument("--tolerance", type=float, metavar="REL",
                   help="--verify: largest relative error (max |error| / max |reference|) that passes (default "
                        f"{', '.join(f'{k} {v[0]:g}' for k, v in TOLERANCES.items())})")
    p.add_argument("--min-cosine", type=float, metavar="C",
                   help="--verify: smallest cosine similarity that passes (default "
                        f"{', '.join(f'{k} {v[1]:g}' for k, v in TOLERANCES.items())})")


def _check_precision(args: argparse.Namespace) -> None:
    from gpusim.compiler.errors import CompilerError

    if args.verify and not args.precision:
        raise CompilerError("--verify needs --precision f16, bf16 or int8")
    if (args.tolerance is not None or args.min_cosine is not None) and not args.verify:
        raise CompilerError("--tolerance and --min-cosine need --verify")
    if args.precision and args.dtype not in (None, "f32"):
        raise CompilerError("--precision converts an f32 model; drop --dtype")
    if args.precision and args.tune:
        raise CompilerError("--precision compiles with template defaults; drop --tune")


def _verify(args: argparse.Namespace, graph, cfg, cost) -> int:
    from gpusim.compiler.accuracy import validate

    report = validate(graph, args.precision, cfg, cost, tolerance=args.tolerance, min_cosine=args.min_cosine)
    if args.json != "-":
        print(report)
    emit_json(report.to_dict(), args.json)
    return 0 if report.passed else 1


def _onnx_suite(args: argparse.Namespace) -> int:
    from gpusim.compiler import onnx_suite
    from gpusim.compiler.errors import CompilerError

    if args.model is not None:
        raise CompilerError("--onnx-suite walks the onnx package's models; give no MODEL")
    outcomes = onnx_suite.walk()
    if args.json != "-":
        print(onnx_suite.summary(outcomes))
    emit_json({"passed": sum(o.passed for o in outcomes), "models": len(outcomes),
               "outcomes": [{"folder": o.folder, "model": o.name, "status": o.status, "detail": o.detail,
                             "seconds": round(o.seconds, 3)} for o in outcomes]}, args.json)
    return 0


def _shapes(items: list[str] | None) -> dict[str, list[int]]:
    """`--shape x=1,64` -> {'x': [1, 64]}."""
    from gpusim.compiler.errors import CompilerError

    shapes = {}
    for item in items or []:
        name, sep, dims = item.partition("=")
        try:
            shapes[name.strip()] = [int(d) for d in dims.split(",")]
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise CompilerError(f"--shape {item!r}: expected INPUT=D0,D1,... (integers)")
    return shapes


# ---- sharding, memory planning, placement (issue 26; docs/compiler.md) ----------------------------

LINKS = {"nvlink": "nvswitch", "nvlink_ring": "nvlink_ring", "pcie": "pcie"}


def _add_issue26_flags(p) -> None:
    p.add_argument("--shard", type=integer(1, 1024), metavar="N",
                   help="split the graph over N GPUs of the config's node (system.gpus raised to N) and run it as a "
                        "program: kernels per GPU, collectives on the links")
    p.add_argument("--link", choices=tuple(LINKS),
                   help="with --shard: the GPUs' interconnect (nvlink: all-to-all through NVSwitch; default the "
                        "config's system.gpu_interconnect)")
    p.add_argument("--parallel", choices=PARALLEL, default="tensor",
                   help="with --shard: tensor parallel (Megatron column/row splits, default) or data parallel "
                        "(inputs split by rows)")
    p.add_argument("--chunks", type=integer(1, 1 << 20), default=1,
                   help="with --shard: run row-wise kernels and collectives in chunks of rows, to overlap "
                        "communication with compute (default 1)")
    p.add_argument("--streams", type=integer(1, 64), default=2,
                   help="with --shard: CUDA streams the kernels and collectives are spread over (default 2)")
    p.add_argument("--plan-memory", action="store_true",
                   help="plan the optimised kernels' tensors into one arena (liveness, in-place, reuse) and "
                        "report the peak before and after")
    p.add_argument("--place", metavar="CPU,GPU",
                   help="place each operator on one of these configs (e.g. cpu_8core,a100) by a roofline cost "
                        "model counting PCIe transfers, instead of compiling")


def _check_issue26_flags(args) -> None:
    from gpusim.compiler.errors import CompilerError

    shard_only = [f for f, v in (("--link", args.link), ("--chunks", args.chunks != 1),
                                 ("--parallel", args.parallel != "tensor"), ("--streams", args.streams != 2)) if v]
    if shard_only and not args.shard:
        raise CompilerError(f"{', '.join(shard_only)} {'needs' if len(shard_only) == 1 else 'need'} --shard N")
    if args.shard and args.place:
        raise CompilerError("--shard and --place are separate analyses: give one")
    if (args.shard or args.place) and (args.tune or args.plan_memory):
        raise CompilerError("--tune and --plan-memory apply to the compiled kernels, not to --shard or --place")


def _node_overrides(args) -> dict:
    overrides = parse_sets(args.config_sets, "--config-set")
    if args.shard:
        overrides.setdefault("system.gpus", args.shard)
        if args.link:
            overrides["system.gpu_interconnect"] = LINKS[args.link]
    return overrides


def _shard_or_place(args, graph, cfg, cost) -> int:
    from gpusim.compiler.cost import cost_based_fusion
    from gpusim.compiler.passes.manager import run_pipeline
    from gpusim.compiler.placement import place
    from gpusim.compiler.shard_cost import compiler_cost, run_sharded

    if args.place:
        configs = [gpusim.load_config(name.strip()) for name in args.place.split(",") if name.strip()]
        placed = place(graph, configs)
        if args.json != "-":
            print(placed.table(graph))
        emit_json(placed.to_dict(), args.json)
        return 0
    fusion = cost_based_fusion(cost, cfg)
    run = run_sharded(graph, cfg, args.shard, strategy=args.parallel, cost=compiler_cost(cost, cfg),
                      chunks=args.chunks, streams=args.streams,
                      optimise=lambda local: run_pipeline(local, should_fuse=fusion)[0])
    if args.json != "-":
        print(run.summary())
    emit_json(run.to_dict(), args.json)
    return 0
