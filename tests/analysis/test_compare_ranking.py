"""`gpusim compare` of designs of one kind (issue 37, item 9): three GPUs are ranked, fastest first, at
the smallest and the largest size, in time; it said "one design only: nothing to compare"."""

from gpusim.analysis.compare import ComparePoint, Comparison, explain


def _point(config, size, seconds):
    return ComparePoint(config, size, seconds, seconds * 0.9, 5e-6, 0.0, 0, 0, 1.0, False, seconds, "gpu")


def test_three_gpus_are_ranked_by_time():
    seconds = {("a100", 100): 9e-6, ("h200", 100): 8e-6, ("gtx980", 100): 12e-6,
               ("a100", 10**6): 60e-6, ("h200", 10**6): 30e-6, ("gtx980", 10**6): 240e-6}
    c = Comparison("vecadd", ("a100", "h200", "gtx980"), (100, 10**6), False, 2**18,
                   tuple(_point(cfg, n, s) for (cfg, n), s in seconds.items()), (), ())
    text = explain(c)
    assert "one design only" not in text
    assert ("At n = 100, h200 is fastest (8.0 us): 1.12x faster than a100 (9.0 us), 1.50x faster than gtx980 "
            "(12.0 us).") in text
    assert "At n = 1,000,000, h200 is fastest (30.0 us): 2.00x faster than a100 (60.0 us), 8.00x faster" in text


def test_one_design_is_still_said_so():
    c = Comparison("vecadd", ("a100",), (100,), False, 2**18, (_point("a100", 100, 1e-5),), (), ())
    assert explain(c) == "one design only: nothing to compare"
