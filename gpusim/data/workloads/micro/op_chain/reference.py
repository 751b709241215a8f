"""op_chain: chain 0 of the chosen opcode after 32 (ilp 1) or 4 (ilp 8) ops an iteration, in float32,
uint32 or float64 as the kernel computes it."""

from __future__ import annotations

import numpy as np

OPS = ("ffma", "fadd", "imad", "iadd", "popc", "dfma", "sin", "cos", "rsqrt", "ex2", "lg2", "rcp", "sqrt", "shl", "xor",
       "min", "cvt", "shfl")
F32 = {
    "ffma": lambda x: np.float32(np.float64(x) * 0.999 + np.float64(np.float32(0.001))),
    "fadd": lambda x: np.float32(x + np.float32(0.5)),
    "sin": np.sin, "cos": np.cos, "ex2": np.exp2, "lg2": np.log2,
    "rsqrt": lambda x: np.float32(1) / np.sqrt(x), "rcp": lambda x: np.float32(1) / x, "sqrt": np.sqrt,
}


def inputs(p: dict, rng: np.random.Generator) -> dict:
    if not 0 <= int(p["op"]) < len(OPS) or int(p["ilp"]) not in (1, 8):
        raise ValueError(f"op must be 0..{len(OPS) - 1} ({', '.join(OPS)}) and ilp 1 or 8")
    return {"outf": np.zeros(1, np.float32), "outu": np.zeros(1, np.uint32), "outd": np.zeros(1, np.float64),
            "op": int(p["op"]), "ilp": int(p["ilp"]), "iters": int(p["iters"]), "y": 7}


def reference(p: dict, inputs: dict) -> dict[str, np.ndarray]:
    op, n = OPS[int(p["op"])], (32 if int(p["ilp"]) == 1 else 4) * int(p["iters"])
    f, u, d = np.float32(0.5), np.uint32(305419896), np.float64(0.5)
    f_turn = True
    with np.errstate(all="ignore"):
        for _ in range(n):
            if op in F32:
                f = np.float32(F32[op](np.float32(f)))
            elif op == "imad":
                u = np.uint32((int(u) * 3 + 1) & 0xFFFFFFFF)
            elif op == "iadd":
                u = np.uint32((int(u) + 7) & 0xFFFFFFFF)
            elif op == "popc":
                u = np.uint32(bin(int(u)).count("1"))
            elif op == "shl":
                u = np.uint32((int(u) << 1) & 0xFFFFFFFF)
            elif op == "xor":
                u = np.uint32(int(u) ^ 1540483477)
            elif op == "min":
                u = min(u, np.uint32(7))
            elif op == "cvt":  # one op of the u32 -> f32 -> u32 pair (ops come in pairs)
                if f_turn:
                    f = np.float32(u)
                else:
                    u = np.uint32(f)
                f_turn = not f_turn
            elif op == "shfl":  # every lane holds the same value: the butterfly returns it
                pass
            else:  # dfma
                d = d * 0.999 + 0.001
    return {"outf": np.array([f], np.float32), "outu": np.array([u], np.uint32), "outd": np.array([d])}
