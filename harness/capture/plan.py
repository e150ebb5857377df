"""The capture plan: what the selected claim tests read from the unedited passes over each prompt set, so each
forward pass runs once.

A claim test declares its reads of unedited passes with ``@pytest.mark.reads(topic(SinkProfile()), ...)``. Before a
model's tests run, the plugin gathers the declarations of the tests selected on it (``Plan``); the session's first
capture of a planned prompt set then runs one pass that reads every planned read of that set, and of every planned
set whose prompts are rows of it: the 4-, 16- and 32-prompt topic sets are the first rows per topic of the
64-prompt probe set (``corpus.topic_prompts`` draws each topic's documents in one seeded order whatever the count),
so they are read in its pass, each read kept only for the prompts that want it. A read no test declared still
works: it runs a pass of its own (benchmarks/bench_suite.py shows it as work above the floor).
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.capture.reads import Read


@dataclass(frozen=True)
class Want:
    """Reads of the unedited pass over one prompt set: ``kind`` a ``Session.prompts`` kind, ``n`` its prompt count (a
    ``Settings`` field name or a number)."""

    kind: str
    n: str | int
    reads: tuple[Read, ...]


def topic(*reads: Read) -> Want:
    """The run's topic prompts (``--n-prompts``)."""
    return Want("topic", "n_prompts", reads)


def probe(*reads: Read) -> Want:
    """The topic probes' prompts (``--n-probe-prompts``)."""
    return Want("topic", "n_probe_prompts", reads)


def topic_rows(n: int, *reads: Read) -> Want:
    """A fixed number of topic prompts (the first n/4 per topic)."""
    return Want("topic", n, reads)


def fixed0(*reads: Read) -> Want:
    """The topic prompts with the first prompt's token 0 in every prompt (no-BOS models; BOS models: the topic
    prompts themselves)."""
    return Want("fixed0", "n_prompts", reads)


class Plan:
    """The wants of the selected tests, per model."""

    def __init__(self):
        self.wants: dict[str, list[Want]] = {}

    def add(self, model: str, wants) -> None:
        self.wants.setdefault(model, []).extend(wants)

    def of(self, model: str) -> list[Want]:
        return self.wants.get(model, [])
