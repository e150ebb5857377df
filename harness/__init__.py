"""abspos-claims: the claims of 'Where does Absolute Position come from in decoder-only Transformers?'
as tests on real RoPE models. What a claim test uses is importable from here, and the notebook API
(``verify``, ``Verdicts``, ``RunFailed``: harness/api.py, loaded on first use)."""

from harness.outcome.verdict import ClaimNotHeld, Inconclusive, NotApplicable, holds, judge
from harness.spec.applies import family_sizes
from harness.spec.claims import CLAIMS, claim
from harness.spec.decision import at_least, at_most, within

__all__ = [
    "CLAIMS",
    "ClaimNotHeld",
    "Inconclusive",
    "NotApplicable",
    "RunFailed",
    "Verdicts",
    "at_least",
    "at_most",
    "claim",
    "family_sizes",
    "holds",
    "judge",
    "verify",
    "within",
]
_API = ("RunFailed", "Verdicts", "verify")


def __getattr__(name: str):
    """The API on first use: ``import harness`` (every claim file does) stays light; the API brings in the report
    and run layers."""
    if name in _API:
        from harness import api

        return getattr(api, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
