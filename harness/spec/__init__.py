"""What is measured, as data: the models (registry and paper stand-ins), the claims with their paper values, criteria and
tolerances, and the run's settings. Pure Python: nothing here imports torch, transformers or any other layer."""
