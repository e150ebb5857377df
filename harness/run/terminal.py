"""Writing to pytest's terminal from inside a run, past its output capture."""

from __future__ import annotations


def terminal_writer(config):
    """Progress lines to pytest's terminal past its output capture, on a line of their own (after the test dots of
    the line in progress), so a long capture shows as it runs (xdist workers' output is not shown)."""
    state = {"status_line": False}  # is the terminal's current line one of ours (rewritten in place)?

    def write(text: str) -> None:
        capman = config.pluginmanager.getplugin("capturemanager")
        reporter = config.pluginmanager.getplugin("terminalreporter")  # registered after this plugin's configure
        if capman is None or reporter is None:
            return
        with capman.global_and_fixture_disabled():
            if reporter._tw.width_of_current_line and not state["status_line"]:
                reporter.write("\n")  # leave the line of test dots as it is
            reporter.write(text, flush=True)
        state["status_line"] = not text.endswith("\n")

    return write
