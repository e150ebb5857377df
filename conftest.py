"""Root conftest: the suite's options, markers, model parametrization and report live in a plugin."""

pytest_plugins = ["harness.run.plugin"]
