"""First ready, first come first served (Rixner et al., "Memory Access Scheduling", ISCA 2000): a
request that hits the row a bank has open is served before older requests that must switch rows.

The controller resolves each request when it arrives (closed form, as the FIFO servers), so it cannot
reorder a queue after the fact. What it keeps per bank is the row that was open before its latest
booked switch and when that switch's precharge starts: a request for that row arriving before then
would, in a first-ready queue, have been served ahead of the switch, so it is served on the still-open
row and pushes the switch (and what the bank booked after it) back by its column time. The requests
already booked behind the switch keep the times they were given (the approximation); at most `cap`
requests (`dram.queue_depth`) overtake one switch, so a row switch is not starved."""

from gpusim.timing.jit import njit


@njit
def may_overtake(prev_row, prev_until, overtaken, row, t, cap):
    """Whether a request for `row` at `t` may be served on the row the bank had open before its
    latest booked row switch (`prev_row`, whose precharge starts at `prev_until`)."""
    return row == prev_row and t < prev_until and overtaken < cap
