"""The names a run gives claims by: ``--claims`` ids and selection names expanded to claim ids, what a claim test (by
function name) runs on, and whether the catalogue can be read at all (checked before any work). The claims are
harness/spec/claims.py's registry.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Sequence

from harness.spec import catalogue
from harness.spec.claims import CLAIMS, ClaimRegistrationError, claim


def catalogue_problem() -> str | None:
    """Why the claims catalogue (``$ABSPOS_CLAIMS_DIR`` or claims/) cannot be read, in one line (None when it can):
    checked before any work by the commands that read claims and by the pytest plugin."""
    try:
        len(CLAIMS)
    except (catalogue.CatalogueError, ClaimRegistrationError) as e:
        return str(e)
    return None


def expand(names: Sequence[str]) -> list[str]:
    """Claim ids and selection names (``--claims core,<id>``) as the claim ids they name, each once, in the order
    given; an unknown name raises ``UnknownClaim`` (one line, with a did-you-mean)."""
    out: list[str] = []
    for name in names:
        selection = CLAIMS.selections.get(name)
        out += list(selection.claims) if selection is not None else [claim(name).id]
    return list(dict.fromkeys(out))


def target_of(test: str) -> str:
    """What a claim test (by function name) runs on: ``model`` (each selected model), ``family`` (each family of the
    selected models), ``synthetic`` (each of the related paper's synthetic sets named) or ``none`` (once, without a
    model); read from the test functions' parameters in the catalogue folder (``catalogue.tests_targets``). A test
    not found there (registered by a plugin of one's own) runs on models."""
    return _targets(str(catalogue.folder())).get(test, "model")


@cache
def _targets(folder: str) -> Mapping[str, str]:
    return MappingProxyType(catalogue.tests_targets(Path(folder)))
