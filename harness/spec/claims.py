"""What a claim of the paper is made of, and the registry its declarations are loaded into.

A claim's declaration lives beside its tests (``claims/<section>.py`` beside ``claims/test_<section>.py``): its section,
one-line statement, the tests that verify it, each with the models its prediction applies to (a named predicate,
harness/spec/applies.py) and its criterion in words, the figures it records (name, plot kind, the paper's value and
tolerance per paper model, the reader's words for it), the thresholds its verdict uses, each with the paper sentence
it comes from, the prompt sets it draws beyond the run's, its plots' captions and, for a claim judged across runs,
what a merge of runs reads. This module holds the schema, the registry (loaded on first use, by
harness/spec/catalogue.py) and the lookups the report, the plots, METHODS.md's claim table and ``Figures.add`` use;
it never names a claim. The paper's values and thresholds are harness/spec/paper_values.py's; the names a run gives
claims by (``--claims``), harness/spec/claim_names.py's.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, cached_property
from string import Formatter
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping

from harness.spec import catalogue
from harness.spec.applies import Applies
from harness.spec.decision import Judgement
from harness.spec.models import ModelSpec, display_name
from harness.spec.paper_values import PaperValue, Threshold


class UndeclaredFigure(KeyError):
    """A claim test recorded a figure its registry entry does not declare (a harness error, not a verdict)."""

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownClaim(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class ClaimRegistrationError(ValueError):
    """A registry entry that contradicts itself or another one (``register_claim``): one line naming what."""


# ---- what a claim is made of ------------------------------------------------------------------------


@dataclass(frozen=True)
class FigureSpec:
    """A number a claim test records. ``name`` may hold ``{placeholders}`` for figures named at run time
    (``ablation:random heads ({k}, {draws} draws)``). ``plot`` is ``kind`` or ``kind.role`` (see plots.py)."""

    name: str
    plot: str | None = None
    paper: Mapping[str, PaperValue] = field(default_factory=dict)
    words: str = ""  # the figure in a reader's words, with its unit: the report's "measured" column names it so
    paper_from: str | None = None  # a plotted series whose paper value is another figure's (the first bin's)
    options: Mapping[str, Any] = field(default_factory=dict)  # what its plot kind reads of it (plots.py says which)
    # the smallest step the figure moves by where it is discrete (a permutation p-value: 1 / (n_perm + 1)); a rerun is
    # compared with its snapshot or baseline allowing two such steps, since a float's last digits on another CPU can
    # move one permutation across the observed statistic
    resolution: float = 0.0

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        parts = re.split(r"\{[^}]*\}", self.name)
        return re.compile("^" + ".+?".join(re.escape(p) for p in parts) + "$")

    def matches(self, name: str) -> bool:
        return self.pattern.match(name) is not None


@dataclass(frozen=True)
class PromptDraw:
    """A topic prompt set a claim draws beyond the run's: ``what`` it is, and its prompts' length from the run's
    (``seq_len``) and the model (``spec``; None when the question is asked of every model), None where it is not
    drawn. ``pairs``: its (query, key) pairs are drawn from it (--n-pairs is bounded by the longest such set)."""

    what: str
    length: Callable[[int, ModelSpec | None], int | None]
    pairs: bool = False


@dataclass(frozen=True)
class PlotSpec:
    """What a plot kind reads of a claim beyond its figures: the ``caption`` after the claim's id, ``options``
    (harness/report/plots.py says which each kind reads), and ``shown_with``: other claims whose report sections show
    the plot too, after their own, each with the sentence that says why there (a yardstick one claim measures for
    another); ``draw``: the claim's own drawing of the kind, ``<module>.<function>`` of a module beside the declaration
    (``claims/<section>_plots.py``), in place of a generic kind's."""

    caption: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    shown_with: Mapping[str, str] = field(default_factory=dict)
    draw: str = ""


@dataclass(frozen=True)
class AcrossRuns:
    """How a claim over a family's sizes is judged when each size was measured in a run of its own: a merge of the
    runs (harness/report/ladder.py) reads ``figures`` (causal and bidirectional head-mean ΔR²), and where kept the
    bootstrap rows ``rows`` over ``prompts`` prompts, from each size's record of the claim test ``source``, and calls
    ``judge`` (declared beside the claim, which its ``test`` calls too) to judge ``test`` on the merged ladder."""

    test: str
    source: str
    figures: tuple[str, str]
    judge: Callable[..., Judgement]  # (sizes, base, bi, base_rows=None, bi_rows=None, n=0) -> the claim's Judgement
    rows: tuple[str, ...] = ()  # the source's bootstrap rows of ``figures`` (paired across runs), if it keeps them
    prompts: str = ""  # the source's figure holding how many prompts those rows resample


@dataclass(frozen=True)
class ClaimTest:
    """One test of a claim: the models its prediction applies to, and what its verdict checks in words for the
    report's lead table (the criterion with its thresholds, read from the claim's entry, never restated), the
    headline figure shown as measured ± 95% CI, and the paper's number where the entry has none per paper model
    for that figure (a band, a table, or "lost in extraction")."""

    applies: Applies
    criterion: str  # what "held" means; {fields} are the claim's thresholds (ClaimSpec.thresholds)
    figure: str | tuple[str, ...] | None  # the headline figure(s) the verdict is decided on (None: a property test)
    paper: str = ""  # the paper's number in words, where the registry keeps none per paper model for the figure
    column: int | None = None  # a figure of rows ([layer, position, sink, accuracy], ...): the column to show
    # the figures whose paper values this test judges, where several tests record one (each judged once; the others
    # report it): None, every paper-valued figure it records
    paper_values: tuple[str, ...] | None = None

    @property
    def headline(self) -> tuple[str, ...]:
        return () if self.figure is None else (self.figure,) if isinstance(self.figure, str) else tuple(self.figure)

    def words(self, claim_id: str) -> str:
        """The criterion with the claim's thresholds filled in."""
        return fill(self.criterion, claim(claim_id).thresholds)


def fill(criterion: str, thresholds: Mapping[str, Threshold]) -> str:
    return Formatter().vformat(criterion, (), {k: t.value for k, t in thresholds.items()})


@dataclass(frozen=True)
class ClaimSpec:
    id: str
    section: str
    statement: str
    claim_tests: Mapping[str, ClaimTest]  # test function name -> where its prediction applies, what its verdict checks
    measurement: str  # the harness functions that compute it (METHODS.md's claim table)
    figures: tuple[FigureSpec, ...] = ()
    thresholds: Mapping[str, Threshold] = field(default_factory=dict)
    draws: tuple[PromptDraw, ...] = ()  # prompt sets beyond the run's (checked against the corpus before any work)
    plots: Mapping[str, PlotSpec] = field(default_factory=dict)  # plot kind -> its caption and options
    across_runs: AcrossRuns | None = None  # a claim over a family's sizes: how a merge of one-size runs judges it
    glossary: Mapping[str, str] = field(default_factory=dict)  # terms its figures use -> their meaning (the report's)
    paper: str = ""  # the paper it comes from where not the main one (such claims are listed after the main paper's)
    source: str = ""  # the declaration's file (set by the catalogue), named in its errors

    @cached_property
    def tests(self) -> Mapping[str, Applies]:
        """Test function name -> where its prediction applies."""
        return MappingProxyType({t: c.applies for t, c in self.claim_tests.items()})

    def figure(self, name: str) -> FigureSpec:
        for f in self.figures:
            if f.matches(name):
                return f
        raise UndeclaredFigure(
            f"{self.id} records {name!r}, which its declaration{f' in {self.source}' if self.source else ''} does not "
            f"declare (declared: {', '.join(f.name for f in self.figures) or 'none'})"
        )

    def threshold(self, name: str) -> Any:  # a number, a pair or a table (Threshold.value): the test knows which
        return self.thresholds[name].value

    def paper_value(self, model: str | None, figure: str) -> PaperValue | None:
        """The paper's number for a figure on one of its models, or None."""
        return self.figure(figure).paper.get(model or "")


@dataclass(frozen=True)
class Selection:
    """A named set of claims a run selects by its name (``--claims core``), declared beside the claims (a declaration
    module's ``SELECTIONS``); ``why`` says in a line what it shows a reader."""

    name: str
    claims: tuple[str, ...]
    why: str


# ---- the registry ------------------------------------------------------------------------------------


def id_order(claim_id: str) -> tuple:
    """Claim ids in natural order: letters, then the number, then a suffix ("A7" < "B1" < "B9a" < "B10")."""
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.findall(r"\d+|\D+", claim_id))


def paper_then_id(claim_id: str, paper: str) -> tuple:
    """The registry's order: the main paper's claims first, then each related paper's, each in natural id order."""
    return (bool(paper), paper, id_order(claim_id))


def claim_order(claim_id: str) -> tuple:
    """A claim id's place in the registry's order (``paper_then_id``; an unknown id as one of the main paper's)."""
    spec = CLAIMS.get(claim_id)
    return paper_then_id(claim_id, spec.paper if spec else "")


class Registry(Mapping[str, ClaimSpec]):
    """Claim id -> its declaration, in natural id order. The catalogue (claims/*.py beside the tests) is loaded on
    first use; ``freeze`` closes it to additions, ``scratch`` lends a copy a test may add to, restored on exit."""

    def __init__(self) -> None:
        self._claims: dict[str, ClaimSpec] = {}
        self._selections: dict[str, Selection] = {}
        self._loaded = False
        self._frozen = False

    def _load(self) -> dict[str, ClaimSpec]:
        if not self._loaded:
            self._loaded = True
            try:
                for source, entries in catalogue.load():
                    for spec in entries:
                        if not isinstance(spec, ClaimSpec):
                            raise ClaimRegistrationError(f"{source}: CLAIMS holds {spec!r}, not a ClaimSpec")
                        self.register(dataclasses.replace(spec, source=source))
                for source, entries in catalogue.selections():
                    for selection in entries:
                        self.add_selection(selection, source)
            except BaseException:  # never half a catalogue: the next use reads the folder again
                self._claims, self._selections, self._loaded = {}, {}, False
                raise
        return self._claims

    @property
    def selections(self) -> Mapping[str, Selection]:
        """Selection name -> its declaration (``--claims <name>``)."""
        self._load()
        return MappingProxyType(self._selections)

    def add_selection(self, selection: Selection, source: str = "") -> Selection:
        """Add a named selection; refused in one line: not a ``Selection``, a name taken (by a claim id or another
        selection), or a claim id the registry does not hold."""
        where = f"{source}: " if source else ""
        if not isinstance(selection, Selection):
            raise ClaimRegistrationError(f"{where}SELECTIONS holds {selection!r}, not a Selection")
        taken = selection.name in self._selections or selection.name.upper() in (c.upper() for c in self._claims)
        if taken or not selection.name or "," in selection.name:
            raise ClaimRegistrationError(f"{where}selection {selection.name!r}: the name is taken or not a name")
        unknown = [c for c in selection.claims if c not in self._claims]
        if unknown or not selection.claims:
            raise ClaimRegistrationError(
                f"{where}selection {selection.name!r} names {', '.join(unknown) or 'no claim'}, which the registry "
                f"does not hold"
            )
        self._selections[selection.name] = selection
        return selection

    def __getitem__(self, claim_id: str) -> ClaimSpec:
        return self._load()[claim_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def freeze(self) -> None:
        self._load()
        self._frozen = True

    @contextmanager
    def scratch(self) -> Iterator[Registry]:
        """The registry as it is, open to additions for the block and restored after it."""
        saved, frozen, selections = dict(self._load()), self._frozen, dict(self._selections)
        self._frozen = False
        try:
            yield self
        finally:
            self._claims, self._frozen, self._selections = saved, frozen, selections
            self._changed()

    @staticmethod
    def _changed() -> None:
        """Forget the tables read off the declarations (figure words, figure steps)."""
        figure_words_table.cache_clear()
        figure_resolutions.cache_clear()

    def register(self, spec: ClaimSpec) -> ClaimSpec:
        """Add a declaration. Refused, in one line, before anything is added: a frozen registry, an id already
        registered, a test already listed under another claim, a claim without tests, a criterion naming a threshold
        the entry does not set, a headline figure the entry does not declare."""
        claims = self._claims
        if self._frozen:
            raise ClaimRegistrationError(f"claim {spec.id}: the registry is frozen (declare claims in claims/*.py)")
        if spec.id in claims:
            raise ClaimRegistrationError(f"claim {spec.id} registered twice")
        if not spec.claim_tests:
            raise ClaimRegistrationError(f"claim {spec.id} lists no test")
        for test, t in spec.claim_tests.items():
            other = next((c.id for c in claims.values() if test in c.claim_tests), None)
            if other is not None:
                raise ClaimRegistrationError(f"claim {spec.id}: {test} is already a test of claim {other}")
            try:
                fill(t.criterion, spec.thresholds)
            except (KeyError, IndexError, AttributeError, TypeError, ValueError) as e:
                raise ClaimRegistrationError(
                    f"claim {spec.id}: the criterion of {test} names a threshold its entry does "
                    f"not set ({type(e).__name__}: {e})"
                ) from None
            for name in t.headline:
                spec.figure(name)  # UndeclaredFigure, naming what the entry declares
        if spec.across_runs is not None and spec.across_runs.test not in spec.claim_tests:
            raise ClaimRegistrationError(f"claim {spec.id}: across_runs judges {spec.across_runs.test}, not its test")
        merged = {**claims, spec.id: spec}
        self._claims = dict(sorted(merged.items(), key=lambda kv: paper_then_id(kv[0], kv[1].paper)))
        self._changed()
        return spec


CLAIMS = Registry()  # claim id -> its declaration


def register_claim(spec: ClaimSpec) -> ClaimSpec:
    """Add a claim to the registry (lm-evaluation-harness style): a plugin or conftest of your own may add one before
    the session freezes it; the suite's own are declared in claims/*.py."""
    return CLAIMS.register(spec)


def claim(claim_id: str) -> ClaimSpec:
    try:
        return CLAIMS[claim_id]
    except KeyError:
        names = [*CLAIMS, *CLAIMS.selections]
        close = difflib.get_close_matches(claim_id.upper(), [c.upper() for c in names], 1, cutoff=0.8)
        hint = f", did you mean {next(c for c in names if c.upper() == close[0])!r}?" if close else ""
        named = f"; or a selection: {', '.join(CLAIMS.selections)}" if CLAIMS.selections else ""
        raise UnknownClaim(f"unknown claim {claim_id!r}{hint}; registered: {', '.join(CLAIMS)}{named}") from None


def claim_test(test: str) -> ClaimTest | None:
    """A registered test (by function name): where it applies and its criterion; None for a test of no claim."""
    return next((c.claim_tests[test] for c in CLAIMS.values() if test in c.claim_tests), None)


def claim_id_of(test: str) -> str | None:
    """The id of the claim that lists a test (by function name), else None."""
    return next((c.id for c in CLAIMS.values() if test in c.claim_tests), None)


def paper_numbers(claim_id: str, test: str, model: str | None) -> str:
    """The paper's number for a test's headline figure, labelled with the paper model it comes from ("paper,
    Llama-3.2-3B: 0.35"): the run's own model first when it is a paper model, else every paper model the registry
    has a value for; the criterion's words where it has none."""
    c = claim_test(test)
    if c is None:
        raise KeyError(test)
    values = claim(claim_id).figure(c.headline[0]).paper if c.headline else {}
    if model is not None and model in values:
        values = {model: values[model]}
    if values:
        return "; ".join(f"paper, {display_name(m)}: {v.value:g}" for m, v in values.items())
    return f"paper: {c.paper}" if c.paper else ""


# Each headline figure in a reader's words, with its unit: the report's and the terminal's "measured" column and the
# notebook's frame name figures by these.


@cache
def figure_words_table() -> Mapping[str, str]:
    """Every declared figure's words (``FigureSpec.words``) by its name ("name:{arm}" by its name before the arm)."""
    return MappingProxyType({f.name.partition(":{")[0]: f.words for c in CLAIMS.values() for f in c.figures if f.words})


@cache
def figure_resolutions() -> Mapping[str, float]:
    """Every discrete figure's step (``FigureSpec.resolution``) by its name."""
    return MappingProxyType({f.name: f.resolution for c in CLAIMS.values() for f in c.figures if f.resolution})


def figure_words(name: str, claim: str = "") -> str:
    """A figure's name in a reader's words with its unit (its declaration's ``words``, ``claim``'s own where it
    declares the name: two claims may word one name apart); an arm after ":" said in brackets; a name without words
    as it is."""
    base, _, arm = name.partition(":")
    own = [f.words for f in (CLAIMS[claim].figures if claim in CLAIMS else ()) if f.name.partition(":{")[0] == base]
    words = next(filter(None, own), None) or figure_words_table().get(base)
    return name if words is None else f"{words} [{arm}]" if arm else words
