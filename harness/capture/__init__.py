"""The forward passes: prompt sets from the corpus, typed reads and runs, the capture plan, the forward loop with its
progress and workload accounting, the measurement session that runs each pass once, and the measurements built on it."""
