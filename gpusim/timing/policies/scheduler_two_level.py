"""Two-level scheduling (Narasiman et al., "Improving GPU performance via large warps and two-level
warp scheduling", MICRO 2011): only the first `active_warps_two_level` warps of the sub-partition's
priority list may issue, round robin among them in age order; a warp that issues a long-latency
(global memory) instruction or waits at a barrier drops to the end of the list, and the next warp
moves into the active set."""

from gpusim.timing.jit import njit
from gpusim.timing.policies.eligible import eligible


@njit
def pick(P, W, g, t):
    first = -1  # the oldest eligible warp of the active set
    after = -1  # the oldest of those younger than the warp issued last
    last = P.last[g]
    last_age = W.age[last] if last >= 0 else -1
    n = min(P.nw[g], P.active_set)
    warps, age = P.warps, W.age
    for k in range(n):
        x = warps[g, k]
        if eligible(P, W, g, x):
            a = age[x]
            if first < 0 or a < age[first]:
                first = x
            if last >= 0 and a > last_age and (after < 0 or a < age[after]):
                after = x
    if first < 0:
        return -1
    w = after if after >= 0 else first
    P.last[g] = w
    return w


@njit
def on_long_latency(P, g, w):
    n = P.nw[g]
    k = 0
    while P.warps[g, k] != w:
        k += 1
    while k < n - 1:
        P.warps[g, k] = P.warps[g, k + 1]
        k += 1
    P.warps[g, n - 1] = w
