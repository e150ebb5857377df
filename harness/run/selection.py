"""What a run selects, checked before anything is measured: the models (``--models``: names, groups and references)
and whether the topic corpus can fill the prompt sets the run draws for each. A problem is a ``UsageError``: one
line, which the pytest plugin raises as pytest's usage error and ``abspos-claims`` prints as its own.
"""

from __future__ import annotations

import difflib
import os
from typing import Collection

from harness.capture import corpus
from harness.model import references, rehearsal
from harness.model.cache import CacheError, cache_root
from harness.spec.claims import CLAIMS
from harness.spec.models import (
    LADDER_GROUPS,
    REGISTRY,
    UnknownModelError,
    WeightsUnavailable,
    WrongWeights,
    get_spec,
    names,
)
from harness.spec.settings import Settings, pow2_len
from harness.spec.synthetic_sets import SYNTHETIC_ARCHITECTURES, SYNTHETIC_SIZES

# the groups --models names besides LADDER_GROUPS (each read by selected_models)
GROUP_NAMES = ("bundled", "paper", "all", "extra", "rehearsal")


class UsageError(ValueError):
    """A bad option or an input the run cannot use: the message is one line saying which and why."""


def synthetic_targets(option: str) -> tuple[tuple[str, ...], str]:
    """The related paper's synthetic model sets ``--models`` names (``synthetic-<size>``, or ``synthetic-<size>-<arch>``
    for one architecture), as ids ``synthetic-<size>-<arch>``, and the rest of the option for ``selected_models``."""
    out, rest = [], []
    for token in filter(None, (t.strip() for t in option.split(","))):
        if not token.startswith("synthetic"):
            rest.append(token)
            continue
        size, _, arch = token.removeprefix("synthetic-").partition("-")
        if size not in SYNTHETIC_SIZES or (arch and arch not in SYNTHETIC_ARCHITECTURES):
            raise UsageError(
                f"--models {token}: the related paper's synthetic models are synthetic-<size>[-<architecture>], "
                f"size one of {', '.join(SYNTHETIC_SIZES)}, architecture one of {', '.join(SYNTHETIC_ARCHITECTURES)}"
            )
        out += [f"synthetic-{size}-{a}" for a in ([arch] if arch else SYNTHETIC_ARCHITECTURES)]
    return tuple(dict.fromkeys(out)), ",".join(rest)


def selected_models(option: str, log=print) -> tuple[str, ...]:
    """The models the claims run on, from ``--models``: registry names, groups, and references (``hf:``, ``path:``,
    ``gguf:``; harness.model.references), whose derived specs are registered. Tiny random-init models are refused: they
    test the harness (tests/ builds them itself) and have no tokenizer and no learned behaviour to make claims
    about. Every problem is a one-line usage error."""
    out: list[str] = []
    for token in filter(None, (t.strip() for t in option.split(","))):
        if token == "all":
            out += names("bundled") + names("paper")
        elif token in ("bundled", "paper", "extra"):
            out += names(token)
        elif token in LADDER_GROUPS:  # a ladder of real sizes across groups (the size-ladder claim on real weights)
            out += list(LADDER_GROUPS[token])
        elif token == "rehearsal" or token.endswith(rehearsal.SUFFIX):  # registered when a run names them
            rehearsal.register_rehearsals()
            out += names(token) if token == "rehearsal" else [_registered(token)]
        else:
            try:
                out.append(references.register(token, log) or get_spec(token).name)
            except (references.ReferenceError, WrongWeights, CacheError) as e:
                raise UsageError(f"--models: {e}") from None
            except UnknownModelError:
                raise UsageError(
                    f"--models: unknown model {token!r}{did_you_mean(token)}; choose from bundled: "
                    f"{', '.join(names('bundled'))}; paper: {', '.join(names('paper'))} "
                    f"(or the groups bundled, paper, all, rehearsal, extra ({', '.join(names('extra'))}), "
                    f"{', '.join(LADDER_GROUPS)}; or any RoPE model by reference: "
                    f"hf:<org>/<name>[@<revision>], path:<folder>, gguf:<file>)"
                ) from None
    if not out:
        raise UsageError(
            f"--models {option!r}: no model named; choose from bundled: "
            f"{', '.join(names('bundled'))}; paper: {', '.join(names('paper'))} (or the groups "
            f"bundled, paper, all, rehearsal; or a reference hf:<org>/<name>, path:<folder>, gguf:<file>)"
        )
    full = list(dict.fromkeys(n for n in out if REGISTRY[n].group == rehearsal.FULL_GROUP))
    if len(full) > 1:
        raise UsageError(
            f"--models {','.join(full)}: full-size rehearsal builds are named one at a time (each is its paper "
            f"model's size in float32, built and held in memory: an 8B build is 32 GB)"
        )
    tiny = [n for n in out if REGISTRY[n].group == "tiny"]
    if tiny:
        raise UsageError(
            f"--models {','.join(tiny)}: tiny random-init models test the harness mechanics "
            f"(tests/ builds them itself), never the paper's claims; choose bundled or paper "
            f"models ({', '.join(names('bundled') + names('paper'))})"
        )
    return tuple(dict.fromkeys(out))


def named_models(option: str) -> set[str]:
    """The registered models ``--models`` names one by one (not through a group or a reference)."""
    return {t for t in (t.strip() for t in option.split(",")) if t in REGISTRY}


def model_problems(specs, named: Collection[str] = ()) -> list[str]:
    """One line per selected model whose folder is here but cannot be measured: a paper model's weights or tokenizer
    that are not its published checkpoint's (harness.model.checkpoint_checks), or a rehearsal this machine cannot
    build; and a paper model in ``named`` whose weights are absent (named, it was meant to be measured). Weights
    absent from a model a group selected are no problem here: its tests skip with the reason. Checked once per
    folder (cached), before anything is measured."""
    from harness.model.availability import ensure_available  # torch

    out = []
    for spec in specs:
        if spec.group not in ("paper", rehearsal.GROUP, rehearsal.FULL_GROUP):
            continue
        try:
            ensure_available(spec)
        except WrongWeights as e:
            out.append(f"--models {spec.name}: {e}")
        except WeightsUnavailable as e:
            if spec.group == rehearsal.FULL_GROUP:  # named alone, by name: it cannot be built here
                out.append(f"--models {spec.name}: {e}")
            elif spec.name in named and spec.group == "paper":
                out.append(f"--models {spec.name}: {e} (or add --skip-absent to skip its tests)")
    return out


def cache_problem() -> str | None:
    """Why ``$ABSPOS_CACHE`` cannot hold the suite's cache (None if it can): a file, or a folder this user cannot
    write under."""
    root = cache_root()
    where = root
    while not where.exists() and where != where.parent:
        where = where.parent
    if not where.is_dir():
        return f"ABSPOS_CACHE={root}: {where} is a file, not a folder; point ABSPOS_CACHE at a folder"
    if not os.access(where, os.W_OK | os.X_OK) and not (root.is_dir() and os.access(root, os.R_OK | os.X_OK)):
        return f"ABSPOS_CACHE={root}: {where} is not writable here; point ABSPOS_CACHE at a folder of your own"
    return None


def did_you_mean(token: str) -> str:
    """ ", did you mean …?" for a misspelt name or group, or a hub id given without ``hf:`` ("" when none is close)."""
    if "/" in token and ":" not in token:
        named = [n for n, spec in REGISTRY.items() if (spec.hub_id or "").lower() == token.lower()]
        return f", did you mean {named[0]!r} or 'hf:{token}'?" if named else f", did you mean 'hf:{token}'?"
    close = difflib.get_close_matches(token.lower(), [*REGISTRY, *GROUP_NAMES, *LADDER_GROUPS], 1)
    return f", did you mean {close[0]!r}?" if close else ""


def _registered(token: str) -> str:
    """A rehearsal named on its own (``llama-3.2-1b-rehearsal``); another name is a usage error listing them."""
    if token in REGISTRY:
        return token
    raise UsageError(
        f"--models: unknown model {token!r}; the rehearsals: {', '.join(names('rehearsal'))}; "
        f"full size: {', '.join(names('dress'))}"
    )


def prompt_sets(settings: Settings, spec) -> list[tuple[int, int, str]]:
    """(prompts, tokens each, which options or claim ask for it) of every topic prompt set a run of the claims
    draws on ``spec``: the run's, the probes', and each claim's own (its declaration's ``draws``)."""
    s = settings
    out = [
        (s.n_prompts, s.seq_len, "--n-prompts and --seq-len"),
        (s.n_probe_prompts, s.seq_len, "--n-probe-prompts and --seq-len"),
    ]
    for c in CLAIMS.values():
        for d in c.draws:
            if (length := d.length(s.seq_len, spec)) is not None:
                out.append((s.n_prompts, length, f"{c.id}'s {d.what}, with --n-prompts"))
    return out


def corpus_problems(settings: Settings, specs) -> list[str]:
    """One line per prompt set the corpus certainly cannot fill for a model whose token budget the registry
    records (``ModelSpec.corpus_tokens``), with what does fit, and for any other model (paper models, references)
    each set more tokens than the corpus has bytes of text (``text_bound``); one that may not (it depends on the
    documents drawn, or the tokenizer) fails in the run with ``corpus.CorpusTooSmall``."""
    out = []
    for spec in specs:
        budget = spec.corpus_tokens.get(settings.corpus)
        if not budget:  # a model without a recorded budget (paper models, references): the corpus's bytes bound it
            for n, length, what in prompt_sets(settings, spec):
                if n // 4 * (length - 1) > (most := text_bound(settings.corpus)):
                    out.append(
                        f"{what}: {n} prompts of {length} tokens need {n // 4 * length} tokens per topic; the "
                        f"{settings.corpus!r} corpus's smallest topic makes at most {most} in any tokenizer "
                        f"(a token covers a byte of text or more; no token count is recorded for "
                        f"{spec.name}): at most {4 * (most // (length - 1))} prompts of {length} tokens fit"
                        + ("" if settings.corpus == "bbc" else " (or use --corpus bbc)")
                    )
            continue
        for n, length, what in prompt_sets(settings, spec) if budget else []:
            if corpus.fits(budget, n, length) is False:
                total, longest = budget
                longest_fit, most = pow2_len(total // (n // 4) - longest), 4 * (total // (length + longest))
                fit = [f"{n} prompts of at most {longest_fit} tokens"] if longest_fit else []
                fit += [f"{most} prompts of {length} tokens"] if most else []
                out.append(
                    f"{what}: {n} prompts of {length} tokens need {n // 4 * length} tokens per topic; the "
                    f"{settings.corpus!r} corpus's smallest topic has {total} in {spec.name}'s tokenizer"
                    + (f"; it fills {' or '.join(fit)}" if fit else "")
                    + ("" if settings.corpus == "bbc" else " (or use --corpus bbc)")
                )
    return out[:1]


def text_bound(source: str) -> int:
    """An upper bound, whatever the tokenizer, of the tokens the corpus's smallest topic makes as ``topic_prompts``
    joins its documents: a token covers at least one byte of text (byte-level BPE, byte fallback), plus one per
    document for a tokenizer's dummy prefix and three for the separator."""
    return min(sum(len(d.encode()) + 4 for d in docs) for docs in corpus.topic_texts(source).values())
