"""`gpusim compile MODEL`: a model through the compiler — the pass pipeline (fusion decided by a cost
model), kernels lowered from templates (tuned with --tune), each kernel's estimated time, and the
speed-up over the unoptimised graph."""

from __future__ import annotations

import argparse

import gpusim
from gpusim.analysis.sampling import SAMPLE_MODES
from gpusim.cli.args import add_config, add_config_set, add_json, add_output, add_params, add_quiet, integer
from gpusim.cli.common import add_executor_args, emit_json, make_executor, parse_sets
from gpusim.compiler.accuracy import TOLERANCES, random_inputs, validate
from gpusim.compiler.cost import MODELS, make_cost_model
from gpusim.compiler.driver import compile_graph, load_model
from gpusim.compiler.errors import CompilerError
from gpusim.compiler.models import BUILTIN
from gpusim.compiler.passes.precision import PRECISIONS, convert
from gpusim.compiler.tune import STRATEGIES, Tuner


def register(subparsers) -> None:
    p = subparsers.add_parser("compile", help="compile a model to kernels: passes, tuning, time estimates",
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
    p.add_argument("--search", choices=STRATEGIES, default="local",
                   help="search strategy: local (random + local refinement, default) or grid (every point)")
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
    _add_precision(p)
    p.add_argument("--onnx-suite", action="store_true",
                   help="instead of MODEL: walk the onnx package's backend-test models (real, simple, pytorch-*), "
                        "compile each, run it on the functional executor and compare with its shipped outputs")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.onnx_suite:
        return _onnx_suite(args)
    if args.model is None:
        raise CompilerError("give a MODEL, or --onnx-suite")
    if (args.search_cost or args.search != "local") and not args.tune:
        raise CompilerError("--search and --search-cost need --tune")
    if args.dtype is not None and args.model not in BUILTIN:
        raise CompilerError(f"--dtype applies to the built-in models ({', '.join(BUILTIN)})")
    _check_precision(args)
    cfg = gpusim.load_config(args.config, overrides=parse_sets(args.config_sets, "--config-set") or None)
    graph = load_model(args.model, sizes=parse_sets(args.sets), dtype=args.dtype or "f32",
                       shapes=_shapes(args.shapes))
    executor = make_executor(args)
    sampling = {"sample": args.sample, "sample_budget": args.sample_budget}
    cost = make_cost_model(args.cost, args.cache_dir, **sampling)
    if args.verify:
        return _verify(args, graph, cfg, cost)
    if args.precision:
        graph = convert(graph, args.precision, calibration=random_inputs(graph, 1)).graph
    tuner = None
    if args.tune:
        search = (cost if args.search_cost in (None, args.cost)
                  else make_cost_model(args.search_cost, args.cache_dir, **sampling))
        tuner = Tuner(cfg, search, strategy=args.search, budget=args.budget, top_k=args.top_k,
                      measure=None if search is cost else cost, cache_dir=args.cache_dir, executor=executor)
    report = compile_graph(graph, cfg, cost=cost, tuner=tuner)
    if args.json != "-":
        print(report)
    emit_json(report.to_dict(), args.json)
    return 0


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
    if args.verify and not args.precision:
        raise CompilerError("--verify needs --precision f16, bf16 or int8")
    if (args.tolerance is not None or args.min_cosine is not None) and not args.verify:
        raise CompilerError("--tolerance and --min-cosine need --verify")
    if args.precision and args.dtype not in (None, "f32"):
        raise CompilerError("--precision converts an f32 model; drop --dtype")
    if args.precision and args.tune:
        raise CompilerError("--precision compiles with template defaults; drop --tune")


def _verify(args: argparse.Namespace, graph, cfg, cost) -> int:
    report = validate(graph, args.precision, cfg, cost, tolerance=args.tolerance, min_cosine=args.min_cosine)
    if args.json != "-":
        print(report)
    emit_json(report.to_dict(), args.json)
    return 0 if report.passed else 1


def _onnx_suite(args: argparse.Namespace) -> int:
    from gpusim.compiler import onnx_suite

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
