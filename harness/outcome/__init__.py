"""What a run concluded: the verdict vocabulary and ``holds``, the figures a test measured and their checks, snapshots
and baselines, known outcomes, the stability record, and the typed results file."""
