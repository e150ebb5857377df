"""The run's settings (prompts, lengths, pairs, resampling sizes, seed, device, dtype, corpus) and the bounds they
are checked against before any work. Pure data: importing this loads neither torch nor transformers."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable

from harness.spec.claims import CLAIMS
from harness.spec.models import ModelSpec

# the weight dtypes a run may ask for (--dtype); harness/model/devices.py maps each to its torch dtype
DTYPE_NAMES = ("float32", "bfloat16", "float16", "float64")


@dataclass(frozen=True)
class Settings:
    n_prompts: int = 16
    seq_len: int = 128
    n_pairs: int = 4000
    n_perm: int = 1000
    n_boot: int = 1000
    n_probe_prompts: int = 64  # topic probes (§5.1, App. B): 16 per topic for 5-fold CV
    n_random_draws: int = 10  # random-head controls (§5.8): at least 10 (the claim's "draws" threshold)
    seed: int = 0
    batch_size: int = 8
    device: str = "cpu"
    dtype: str = "float32"
    corpus: str = "wiki"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Settings":
        """Settings from a results.json "settings" block (fields it does not know are ignored)."""
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})

    def numbers_key(self) -> dict[str, Any]:
        """The settings of the design that change the measured numbers (all but device, dtype and the
        numerically inert batch size); baselines add the device kind and dtype to it (``snapshots.Baselines``)."""
        return {k: v for k, v in asdict(self).items() if k not in ("device", "dtype", "batch_size")}

    def verdict_key(self) -> dict[str, Any]:
        """The settings a recorded verdict (a known outcome) is keyed by: the design (lengths, prompts, pairs,
        corpus, resampling sizes), not the seed, whose effect on a verdict is the stability check's business."""
        return {k: v for k, v in self.numbers_key().items() if k != "seed"}

    def problems(self) -> list[str]:
        """One line per setting outside its allowed range, naming the option: a setting under which a claim's
        measurement is meaningless (or cannot pass) is refused before any work, never reported as a verdict."""
        out = []
        if self.n_prompts < 12 or self.n_prompts % 4:
            out.append(
                f"--n-prompts {self.n_prompts}: must be a multiple of 4 (balanced topics) and at least 12 "
                f"(the prompt-level test's smallest p is 2^-(n-1); with fewer prompts the top 30 heads cannot "
                f"survive BH at q 0.05 over a model's heads)"
            )
        n = self.seq_len // 8
        if self.seq_len < 16 or self.seq_len % 8 or n & (n - 1):
            out.append(
                f"--seq-len {self.seq_len}: must be 8 times a power of two, at least 16 (16, 32, 64, 128, 256, "
                f"...): the query bins double from [0, 8) up to the prompt's end"
            )
        if self.n_pairs < 1000:
            out.append(
                f"--n-pairs {self.n_pairs}: must be at least 1000 (pairs are split over up to seven query "
                f"bins; fewer leave bins without offset groups of two or more queries)"
            )
        elif self.n_pairs > (most := max_pairs(longest := pair_length(self.seq_len))):
            out.append(
                f"--n-pairs {self.n_pairs}: more than any draw of this run can use: "
                f"{causal_pairs(self.seq_len):,} causal (query, key) pairs exist at --seq-len {self.seq_len}"
                + (
                    ""
                    if longest == self.seq_len
                    else f", {causal_pairs(longest):,} at the {longest} tokens of "
                    f"{longest_pair_draw(self.seq_len)[1]} (the longest prompts drawn from)"
                )
                + f", and from {most:,} on the stratified draw (an equal share per query bin) takes every "
                f"pair of them; choose at most {most}"
            )
        if self.n_perm < 100:
            out.append(
                f"--n-perm {self.n_perm}: must be at least 100 (a permutation p-value cannot go below "
                f"1/(n_perm + 1); fewer cannot pass BH at q 0.05)"
            )
        elif self.n_perm > MAX_N_PERM:
            out.append(
                f"--n-perm {self.n_perm}: at most {MAX_N_PERM:,}: a permutation null holds n_perm values per "
                f"head in float64, {self.n_perm * 1024 * 8 / 2**30:,.0f} GiB at {self.n_perm:,} for a model "
                f"of 1,024 heads (Llama-3.1-8B), and takes as many passes over the pairs; "
                f"{MAX_N_PERM:,} resolve p-values to 1e-6"
            )
        if not 0 <= self.seed < 2**32:
            out.append(f"--seed {self.seed}: must be in 0 .. 2^32 - 1 (numpy's and scikit-learn's seeds)")
        if self.n_probe_prompts < 20 or self.n_probe_prompts % 4:
            out.append(
                f"--n-probe-prompts {self.n_probe_prompts}: must be a multiple of 4 and at least 20 (5-fold "
                f"stratified cross-validation over 4 topics)"
            )
        return out

    def context_problems(self, specs: Iterable[ModelSpec]) -> list[str]:
        """A line when --seq-len is longer than a selected model's context (names each such model)."""
        longest = {s.name: s.context for s in specs if s.context and self.seq_len > s.context}
        if not longest:
            return []
        return [
            f"--seq-len {self.seq_len}: longer than the context of "
            + ", ".join(f"{n} ({c} tokens)" for n, c in longest.items())
            + f" (their context allows at most "
            f"{pow2_len(min(longest.values()))})"
        ]

    def describe(self, key: dict[str, Any]) -> str:
        """A key as one line: only what differs from the defaults ('defaults' when nothing does)."""
        default = Settings().as_dict()
        changed = [f"{k}={v}" for k, v in key.items() if default.get(k) != v]
        return ", ".join(changed) or "defaults"


MAX_N_PERM = 1_000_000  # --n-perm's upper bound (see Settings.problems)


def causal_pairs(seq_len: int) -> int:
    """The causal (query, key) pairs of a prompt of ``seq_len`` tokens: seq_len (seq_len + 1) / 2."""
    return seq_len * (seq_len + 1) // 2


def longest_pair_draw(seq_len: int) -> tuple[int, str]:
    """(tokens, whose) of the longest prompts a run at ``seq_len`` draws (query, key) pairs from: the run's, or a
    claim's longer prompt set (its ``PromptDraw`` with ``pairs``)."""
    longest = (seq_len, "the run's prompts")
    for c in CLAIMS.values():
        for d in c.draws:
            n = d.length(seq_len, None) if d.pairs else None
            if n is not None and n > longest[0]:
                longest = (n, f"{c.id}'s {d.what}")
    return longest


def pair_length(seq_len: int) -> int:
    """The longest prompts a run at ``seq_len`` draws pairs from (``longest_pair_draw``)."""
    return longest_pair_draw(seq_len)[0]


def max_pairs(seq_len: int) -> int:
    """The smallest --n-pairs from which ``pairs.stratified_pairs`` takes every causal pair of ``seq_len`` tokens
    (an equal share per doubling query bin, the last bin [seq_len/2, seq_len) the largest): more draws nothing new."""
    n_bins = (seq_len // 8).bit_length()  # [0, 8), [8, 16), ..., [seq_len/2, seq_len)
    return n_bins * (causal_pairs(seq_len) - causal_pairs(seq_len // 2) - 1) + 1  # the remainder goes to the last bins


def pow2_len(limit: int) -> int:
    """The longest allowed --seq-len (8 times a power of two, at least 16) not above ``limit`` (0 if none)."""
    if limit < 16:
        return 0
    n = 16
    while n * 2 <= limit:
        n *= 2
    return n
