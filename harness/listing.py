"""What ``abspos-claims claims list`` and ``abspos-claims models`` print: every claim with what it runs on, and every
model and synthetic set with the claims that apply to each. What a test runs on (a model at a time, a family's sizes,
the related paper's synthetic sets, or nothing) is the registry's (``harness.spec.claim_names.target_of``); where its
prediction applies, its declaration's (``harness.spec.applies``). Importing this module loads neither torch nor
transformers (the weights' status does, when asked)."""

from __future__ import annotations

import textwrap
from typing import Callable, Mapping, Sequence

from harness.notebook import aligned
from harness.report.matrix import column_blocks
from harness.spec.applies import EVERY_MODEL, Applies, Target, family_sizes
from harness.spec.claim_names import target_of
from harness.spec.claims import CLAIMS, ClaimSpec
from harness.spec.models import LADDER_GROUPS, WeightsUnavailable, WrongWeights
from harness.spec.synthetic_sets import (
    SYNTHETIC_ARCHITECTURE_WORDS,
    SYNTHETIC_ARCHITECTURES,
    SYNTHETIC_PURPOSE,
    SYNTHETIC_SIZES,
)

WIDTH = 100  # the terminal every listing fits
SYNTHETIC_OPTION = "--models " + "|".join(f"synthetic-{s}" for s in SYNTHETIC_SIZES)

# ---- claims list -----------------------------------------------------------------------------------------

RUNS_ON = {
    "model": "each model",
    "none": "no model",
    "family": "a family's sizes",
    "synthetic": "synthetic sets",
}
SOME = "*"  # some of the claim's tests apply to some models only


def runs_on(c: ClaimSpec) -> str:
    """What a claim's tests run on, in a few words ("each model*", "synthetic sets", ...)."""
    kinds = sorted(set(target_of(t) for t in c.tests), key=list(RUNS_ON).index)
    restricted = any(a is not EVERY_MODEL for t, a in c.tests.items() if target_of(t) == "model")
    return "; ".join(RUNS_ON[k] + (SOME if k == "model" and restricted else "") for k in kinds)


def wrapped_table(header: Sequence[str], rows: Sequence[Sequence[str]], widths: Sequence[int | None]) -> str:
    """A plain-text table whose columns of a given width wrap their text within it (None: as wide as its widest
    cell); a row runs over as many lines as its tallest cell."""
    fixed = [w if w is not None else max(len(str(r[i])) for r in [header, *rows]) for i, w in enumerate(widths)]
    out = []
    for row in [header, *rows]:
        cells = [textwrap.wrap(str(c), w, break_on_hyphens=False) or [""] for c, w in zip(row, fixed)]
        for k in range(max(len(c) for c in cells)):
            out.append("  ".join((c[k] if k < len(c) else "").ljust(w) for c, w in zip(cells, fixed)).rstrip())
    return "\n".join(out)


def claims_list(width: int = WIDTH) -> str:
    """One row per claim: id, what its tests run on, section and statement, wrapped to ``width`` columns; then what
    the marks mean, the selections (``--claims core``) and how to name the synthetic sets."""
    rows = [[c.id, runs_on(c), c.section, c.statement] for c in CLAIMS.values()]
    first = [max(len(r[i]) for r in [["claim", "runs on"], *rows]) for i in (0, 1)]
    section = 16
    statement = width - sum(first) - section - 6
    table = wrapped_table(["claim", "runs on", "section", "statement"], rows, [*first, section, statement])
    notes = [
        f"{SOME} some of its tests apply to some models only (by BOS, sliding window, RoPE variant, depth): "
        f"`abspos-claims models` shows which",
        f"synthetic sets: the related paper's models, trained here ({SYNTHETIC_OPTION}; "
        f"`abspos-claims models synthetic-smoke` describes one)",
        f"a family's sizes: two or more sizes of one family selected (the paper's Llama 1B/3B/8B, or "
        f"--models {', '.join(LADDER_GROUPS)})",
        *(f"--claims {s.name}: {', '.join(s.claims)}, {s.why}" for s in CLAIMS.selections.values()),
    ]
    return (
        table
        + "\n\n"
        + "\n".join(textwrap.fill(n, width, subsequent_indent="  ", break_on_hyphens=False) for n in notes)
    )


# ---- models --------------------------------------------------------------------------------------------


def bos_policy(spec) -> str:
    if not spec.adds_bos:
        return "none"
    return "auto" if spec.bos_token_id is None else f"auto id {spec.bos_token_id}"


def weights_status(spec) -> str:
    """ "present", or why not (the one-line reason of ``weights.ensure_available``)."""
    from harness.model.availability import ensure_available  # torch: loaded by this command alone

    try:
        ensure_available(spec)
    except (WeightsUnavailable, WrongWeights) as e:
        return f"absent: {e}"
    if spec.rehearses:  # random weights built on first use: present only once built
        from harness.model import rehearsal

        if not rehearsal.is_built(spec):
            size = rehearsal.weights_bytes(spec.rehearses, spec.rehearsal_size)
            return f"not built yet: built on first use ({size / 1e9:.1f} GB of float32 random weights)"
    return "present"


def model_rows(specs, status: Callable = weights_status) -> list[list[str]]:
    return [
        [s.name, s.family, s.group, bos_policy(s), str(s.sliding_window or "-"), str(s.context or "?"), status(s)]
        for s in specs
    ]


MODEL_HEADER = ("model", "family", "group", "BOS", "sliding window", "context", "weights")


def synthetic_rows(sets: Sequence[str]) -> list[list[str]]:
    """One row per synthetic set named (``synthetic-<size>-<arch>``): its shape, training and what it is for (its
    architecture, the name's last word, in ``architecture_note``)."""
    from harness.synthetic.train import SIZES  # torch: loaded by this command alone

    rows = []
    for name in sets:
        size = name.removeprefix("synthetic-").split("-")[0]
        shape, recipe = SIZES[size].shape, SIZES[size].recipe
        rows.append(
            [
                name,
                f"d_model {shape.d_model}, {shape.heads} heads, {shape.layers} layers, {shape.seq_len} tokens",
                f"{recipe.samples:,} samples x {recipe.epochs} epochs",
                SYNTHETIC_PURPOSE.get(size, ""),
            ]
        )
    return rows


def architecture_note(sets: Sequence[str], width: int = WIDTH) -> list[str]:
    """What the last word of the sets' names says: "-authors: the authors' architecture (...); -decoder: ..."."""
    archs = dict.fromkeys(name.rsplit("-", 1)[1] for name in sets)
    text = "; ".join(f"-{a}: {SYNTHETIC_ARCHITECTURE_WORDS.get(a, a)}" for a in archs) + "; each trained once, cached"
    return textwrap.wrap(text, width, subsequent_indent="  ", break_on_hyphens=False)


SYNTHETIC_HEADER = ("synthetic set", "shape", "training (first use)", "for")
SYNTHETIC_WIDTHS = (None, 22, 16, 33)  # within ``WIDTH`` beside the longest set's name (23)
ALL_SYNTHETIC = tuple(f"synthetic-{s}-{a}" for s in SYNTHETIC_SIZES for a in SYNTHETIC_ARCHITECTURES)


def family_level(applies: Applies) -> bool:
    """A test over a model family (a size ladder) rather than one model: its prediction cannot apply to a target with
    neither, where every model-level one does (the §3 causal-softmax property runs without a model)."""
    return applies.why_not(Target()) is not None


def target(applies: Applies, spec, selected: tuple[str, ...], seq_len: int) -> Target:
    """What the test runs on for this model: the model, or (a family-level test) the model's family."""
    if family_level(applies):
        return Target(None, spec.family, selected, seq_len)
    return Target(spec, None, selected, seq_len)


def applies_to(applies: Applies, spec, selected: tuple[str, ...], seq_len: int, kind: str = "model") -> bool:
    """Whether the test's prediction applies to this model; a family-level test's, when it applies to the model's
    family and the model is one of the sizes it runs on (``harness.spec.applies.family_sizes``); a test of the
    synthetic sets (``kind``) never applies to a language model."""
    if kind == "synthetic":
        return False
    if applies.why_not(target(applies, spec, selected, seq_len)) is not None:
        return False
    return not family_level(applies) or spec.name in family_sizes(spec.family, selected)


def applicability(tests: Mapping[str, Applies], spec, selected: tuple[str, ...], seq_len: int) -> str:
    """ "applying/all" of a claim's tests on one model (or, ``spec`` None, on a synthetic set), "(n/a)" when none
    applies, "-" when none runs on that kind of target (a language model, a synthetic set)."""
    synthetic = [target_of(t) == "synthetic" for t in tests]
    if spec is None:
        n = sum(synthetic)
    else:
        n = sum(applies_to(a, spec, selected, seq_len, target_of(t)) for t, a in tests.items())
    if not n and all(synthetic) != (spec is None):
        return "-"
    return f"{n}/{len(tests)}" + ("" if n else " (n/a)")


def applicability_rows(specs, seq_len: int, sets: Sequence[str] = ()) -> list[list[str]]:
    """Per claim, its applicability on each model and (one column per size named) each synthetic set."""
    selected = tuple(s.name for s in specs)
    sizes = list(dict.fromkeys(name.rsplit("-", 1)[0] for name in sets))
    return [
        [
            cid,
            *(applicability(c.tests, s, selected, seq_len) for s in specs),
            *(applicability(c.tests, None, selected, seq_len) for _ in sizes),
        ]
        for cid, c in CLAIMS.items()
    ]


def weights_notes(specs, rows: list[list[str]], width: int = WIDTH) -> list[str]:
    """The weights column reduced to its first words ("present", "absent"), the rest said once below the table: the
    models whose weights are not found, with where to put them, in one note; any other reason a line each."""
    missing, notes = [], []
    for spec, row in zip(specs, rows):
        status, _, why = row[-1].partition(": ")
        row[-1] = status
        hub = getattr(spec, "hub_id", None)
        plain = f"{spec.name} weights not found: put them in $ABSPOS_MODELS_DIR/{hub} or the Hugging Face cache"
        if why == f"{plain} (`hf download {hub}`)":
            missing.append(f"{spec.name} {hub}")
        elif why:
            notes.append(why if why.startswith(spec.name) else f"{spec.name}: {why}")
    if missing:
        missing[0] = (
            "absent weights: put each in $ABSPOS_MODELS_DIR/<hub id> or the Hugging Face cache (`hf download <hub "
            "id>`): " + missing[0]
        )
        notes.insert(0, ", ".join(missing))
    return [line for n in notes for line in textwrap.wrap(n, width, subsequent_indent="  ", break_on_hyphens=False)]


def models_listing(specs, sets: Sequence[str], seq_len: int, width: int = WIDTH) -> str:
    """The models' table (why weights are absent below it), the synthetic sets' table, and the claims × targets
    table, each within ``width`` columns (the claims × targets table in blocks of the columns that fit)."""
    parts = []
    if specs:
        rows = model_rows(specs)
        notes = weights_notes(specs, rows, width)
        parts.append("\n\n".join([aligned(MODEL_HEADER, rows), *(["\n".join(notes)] if notes else [])]))
    if sets:
        table = wrapped_table(SYNTHETIC_HEADER, synthetic_rows(sets), SYNTHETIC_WIDTHS)
        parts.append("\n".join([table, *architecture_note(sets, width)]))
    sizes = list(dict.fromkeys(name.rsplit("-", 1)[0] for name in sets))
    rows = applicability_rows(specs, seq_len, sets)
    header = ["claim", *(s.name for s in specs), *sizes]
    blocks = column_blocks(
        [header[0], *(r[0] for r in rows)], [[h, *(r[k] for r in rows)] for k, h in enumerate(header) if k], width
    )
    intro = (
        f"claims × models: tests whose prediction applies, of the claim's tests (seq_len {seq_len}; n/a: none "
        f"applies; -: its tests run on the other kind, language models or synthetic sets)"
    )
    parts.append("\n".join(textwrap.wrap(intro, width)) + "\n" + "\n\n".join("\n".join(b) for b in blocks))
    return "\n\n".join(parts)
