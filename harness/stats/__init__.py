"""The statistics, pure functions on arrays: leakage (per-head permutation tests, CIs, pairs), probes, head rankings,
sinks, directions and the scaling ladder. Nothing here loads a model."""
