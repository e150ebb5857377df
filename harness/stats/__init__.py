"""The statistics, pure functions on arrays: the leakage pair design (pairs), the per-head leakage ΔR² (leakage),
its within-group shuffles (shuffles), permutation / sign-flip tests and FDR (nulls), the bootstrap and intervals
(intervals), probes, head rankings, sinks, directions and the scaling ladder. Nothing here loads a model."""
