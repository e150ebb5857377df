"""Benchmarks, run as scripts (``.venv/bin/python benchmarks/bench_leakage.py --help``; README, Benchmarks); a
package so that tests import their shared pieces as ``benchmarks.argsort_permutations`` and ``benchmarks.bench_nightly``."""
