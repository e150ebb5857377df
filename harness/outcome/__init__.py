"""What a run concluded: the verdict vocabulary and checks, snapshots and baselines, known outcomes, the stability
record, and the typed results file."""
