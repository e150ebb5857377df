"""The related paper's two synthetic tasks (Gu et al. 2026; ../shared/paper/DEPOSIT.md), as seeded generators.

- **Task 1** (position-sensitive): a fixed pair of trigger words with ``between`` filler words between them (and
  ``left`` / ``right`` fillers around them); the label is ``between + 1``, classified over the whole vocabulary.
- **Task 2** (position-agnostic): ``n`` occurrences of 30 fixed trigger words among fillers, shuffled; the label is
  ``n``, and label 0 is ignored in the loss and in accuracy (the authors' convention).

Differences from the authors' code (METHODS.md, "The related paper's synthetic tasks"): their 574-entry vocabulary
(a Unigram tokenizer on an unpublished corpus) is replaced by the five special tokens and the 569 most frequent
lowercase words of this suite's Wikipedia corpus, one word one token (theirs re-tokenised words, so a word could span
tokens while labels counted words); filler words never include the specials, and Task 1's are drawn with replacement
(theirs without, within a segment). The lengths scale with the model's
``seq_len`` (the authors': 128 tokens, 120 words, between 1-70, sides 1-25, Task 2's n 0-100).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

SPECIALS = ("[UNK]", "[PAD]", "[CLS]", "[SEP]", "[MASK]")
PAD = 0  # the authors pad with id 0
VOCAB_SIZE = 574
N_CLASSES = VOCAB_SIZE  # both tasks classify over the vocabulary's size, as the authors' output layer does
PAPER_LEN = 128
TRIGGER_SEED = 2505_13027  # the triggers are fixed for a data set: every seed's data shares them
TASKS = ("task1", "task2")


@lru_cache(maxsize=1)
def vocabulary() -> tuple[str, ...]:
    """The five specials, then the 569 most frequent lowercase words of the Wikipedia corpus (ties by spelling)."""
    from harness.capture.corpus import topic_texts

    counts = Counter(w for docs in topic_texts("wiki").values() for d in docs for w in re.findall(r"[a-z]+", d.lower()))
    words = sorted(counts, key=lambda w: (-counts[w], w))[: VOCAB_SIZE - len(SPECIALS)]
    return SPECIALS + tuple(words)


WORDS = np.arange(len(SPECIALS), VOCAB_SIZE)  # filler and trigger candidates: every word, no special


@dataclass(frozen=True)
class TaskShape:
    """A task's lengths at one sequence length, scaled from the authors' 128."""

    seq_len: int

    @property
    def words(self) -> int:  # the authors' 120 of 128 (the rest padding: no special token is inserted)
        return self.seq_len - max(1, round(8 * self.seq_len / PAPER_LEN))

    @property
    def max_between(self) -> int:
        return max(2, round(70 * self.seq_len / PAPER_LEN))

    @property
    def max_side(self) -> int:
        return max(1, round(25 * self.seq_len / PAPER_LEN))

    @property
    def max_count(self) -> int:
        return max(2, round(100 * self.seq_len / PAPER_LEN))


def triggers(task: str) -> np.ndarray:
    """Task 1's pair, or Task 2's 30 words: fixed for the data set (drawn once from TRIGGER_SEED)."""
    rng = np.random.default_rng(TRIGGER_SEED + TASKS.index(task))
    return rng.choice(WORDS, size=2 if task == "task1" else 30, replace=False)


def task1(n: int, seq_len: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` distinct Task 1 samples: ids [n, seq_len] (padded with 0) and labels ``between + 1`` [n]."""
    shape, (w1, w2) = TaskShape(seq_len), triggers("task1")
    rng = np.random.default_rng(seed)
    rows: dict[bytes, tuple[np.ndarray, int]] = {}
    while len(rows) < n:
        between = int(rng.integers(1, shape.max_between + 1))
        left, right = (int(x) for x in rng.integers(1, shape.max_side + 1, size=2))
        words = np.concatenate(
            [rng.choice(WORDS, left), [w1], rng.choice(WORDS, between), [w2], rng.choice(WORDS, right)]
        )[: max(shape.words, left + between + 2)]  # cut on the right: w2 is never cut
        ids = np.full(seq_len, PAD, dtype=np.int64)
        ids[: min(len(words), seq_len)] = words[:seq_len]
        rows.setdefault(ids.tobytes(), (ids, between + 1))  # de-duplicated, as the authors' data set
    ids_, labels = zip(*rows.values())
    return np.stack(ids_), np.asarray(labels, dtype=np.int64)


def task2(n: int, seq_len: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` Task 2 samples of exactly ``words`` words: ids [n, seq_len] and the trigger count [n] (0 ignored)."""
    shape, trig = TaskShape(seq_len), triggers("task2")
    fillers = np.setdiff1d(WORDS, trig)
    rng = np.random.default_rng(seed)
    ids = np.full((n, seq_len), PAD, dtype=np.int64)
    labels = rng.integers(0, min(shape.max_count, shape.words) + 1, size=n)
    for i, count in enumerate(labels):
        words = np.concatenate([rng.choice(trig, count), rng.choice(fillers, shape.words - count)])
        ids[i, : shape.words] = rng.permutation(words)
    return ids, labels.astype(np.int64)


def generate(task: str, n: int, seq_len: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; known: {', '.join(TASKS)}")
    return (task1 if task == "task1" else task2)(n, seq_len, seed)


def ignored_label(task: str) -> int | None:
    """The label left out of the loss and of accuracy: Task 2's 0 (no trigger), as the authors do; none in Task 1."""
    return 0 if task == "task2" else None
