"""A claim test's pytest node id, parsed in one place.

    "claims/test_section.py::test_name[smollm2-135m]"

has the test "test_name[smollm2-135m]" (its last "::" part), the test function "test_name" and the parameter
"smollm2-135m": a model, or a family for a test over a model family ("…[llama]" of the model-scale test), or "" for a
test without one (the §3 causal-softmax property).
"""

from __future__ import annotations

from typing import NamedTuple


class NodeId(NamedTuple):
    test: str  # the last "::" part: the function and its [parameter]
    function: str
    param: str  # between the brackets that end the test; "" without


def parse(nodeid: str) -> NodeId:
    test = nodeid.split("::")[-1]
    function, bracket, rest = test.partition("[")
    return NodeId(test, function, rest[:-1] if bracket and rest.endswith("]") else "")


def test_function(nodeid: str) -> str:
    """The test function's name: "claims/f.py::test_name[smollm2-135m]" -> "test_name"."""
    return parse(nodeid).function


def param(nodeid: str) -> str:
    """The test's parameter (a model, or a family), "" when it has none."""
    return parse(nodeid).param
