"""chase: nodes form one random cycle through all n nodes (a random permutation's order); the walk from
node 0 takes n steps and so ends back on node 0 after visiting every node once."""

import numpy as np


def inputs(p, rng):
    n = int(p["n"])
    order = rng.permutation(n).astype(np.uint32)
    order = np.concatenate([[0], order[order != 0]]).astype(np.uint32)  # the cycle starts at node 0
    nodes = np.zeros((n, 16), dtype=np.uint32)
    nodes[order, 0] = np.roll(order, -1)
    return {"nodes": nodes, "n": n, "result": np.zeros(1, dtype=np.uint32)}


def reference(p, inputs):
    nodes = inputs["nodes"]
    cur = 0
    for _ in range(int(p["n"])):
        cur = int(nodes[cur, 0])
    return {"result": np.array([cur], dtype=np.uint32)}
