"""The run itself: the pytest plugin (options, parametrization, records), the run context (selection, checks before
any work, classification) and the signal handling that ends a run like Ctrl-C."""
