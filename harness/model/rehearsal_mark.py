"""The mark of a rehearsal build (``harness.model.rehearsal``): ``REHEARSAL.json`` in a model folder of random weights,
and the check that refuses such a folder wherever a model is loaded to be measured (``harness.model.weights``,
``harness.model.references``). A module of its own: rehearsal.py imports the loading path it rehearses, so that
path cannot import rehearsal.py."""

from __future__ import annotations

import json
from pathlib import Path

from harness.model.cache import cache_root
from harness.spec.models import WrongWeights

MARKER = "REHEARSAL.json"


def rehearsals_root() -> Path:
    """Where the ``rehearsal`` group's builds live, laid out as ``$ABSPOS_MODELS_DIR`` holds the paper models
    (``<org>/<repo>``): ``$ABSPOS_CACHE/rehearsal-models``. A registered rehearsal (``ModelSpec.rehearses``) is looked
    for there, and only there (``weights.paper_folder``)."""
    return cache_root() / "rehearsal-models"


def check_not_rehearsal(name: str, folder: Path | str) -> None:
    """WrongWeights (one line) when ``folder`` carries ``REHEARSAL.json``: random weights, refused wherever a model is
    loaded to be measured (a paper, registry or referenced model); ``rehearsal_spec``'s specs are not checked."""
    marker = Path(folder) / MARKER
    if not (marker.exists() or marker.is_symlink()):
        return
    try:
        note = json.loads(marker.read_text())
        what = f"a {'full-size' if note['size'] == 'full' else 'narrow'} rehearsal build of {note['model']}"
    except (OSError, ValueError, TypeError, KeyError):
        what = "a rehearsal build"
    raise WrongWeights(
        f"{name}: {folder} holds {what} (random weights: it carries {MARKER}), not trained weights; refusing to "
        f"measure it (a rehearsal loads only as such: harness.model.rehearsal.rehearsal_spec)"
    )
