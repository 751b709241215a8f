"""First come, first served: each bank serves its requests in the order they arrive. A request to a
row other than the one the bank will have open when its earlier requests are done waits for them and
then switches rows (precharge, activate), even when a later request could have used the open row."""

from gpusim.timing.jit import njit


@njit
def may_overtake(prev_row, prev_until, overtaken, row, t, cap):
    """Whether a request for `row` at `t` may be served on the row the bank had open before its
    latest booked row switch: never, in arrival order."""
    return False
