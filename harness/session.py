"""A measurement session: settings, loaded models, prompt sets and cached forward passes.

Models load once; each (model, prompt set, condition, recipe) capture runs once per session, and
recipes asked for together share one forward pass.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import asdict, dataclass, field

import numpy as np

from . import capture as cap
from . import corpus
from . import devices
from .hooks import HookedModel
from .interventions import condition as apply_condition
from .leakage import PairSet, stratified_pairs, uniform_pairs
from .models import get_spec
from .weights import load_pretrained, random_init_model

@dataclass(frozen=True)
class Settings:
    n_prompts: int = 16
    seq_len: int = 128
    n_pairs: int = 4000
    n_perm: int = 1000
    n_boot: int = 1000
    n_probe_prompts: int = 64  # topic probes (T1, T12): 16 per topic for 5-fold CV
    n_random_draws: int = 3  # random-head controls (T11); the slow variant uses 10
    seed: int = 0
    batch_size: int = 8
    device: str = "cpu"
    dtype: str = "float32"
    corpus: str = "wiki"

    def as_dict(self) -> dict:
        return asdict(self)


# Recipes: what to read during a forward pass. Each maps a model (and the pair set) to {hook name: reader};
# per-layer outputs are stacked on axis 1 in layer order.
def _per_layer(model, point, reader):
    return {name: reader for name in model.names(point)}


def probe_positions(seq_len: int) -> list[int]:
    """Positions whose residual states the topic probe reads: 0, 1, 2, 4, ... and the last one."""
    out, k = [0], 1
    while k < seq_len - 1:
        out.append(k)
        k *= 2
    return out + [seq_len - 1]


def _mean_content(x):
    return x[:, 1:].float().mean(dim=1)  # [B, n, D] -> [B, D], positions >= 1


RECIPES = {
    "pattern_pairs": lambda m, p, n: _per_layer(m, "attn.hook_pattern", cap.pattern_at_pairs(p.i, p.j)),
    "score_pairs": lambda m, p, n: _per_layer(m, "attn.hook_scores", cap.pattern_at_pairs(p.i, p.j)),
    "sink_profile": lambda m, p, n: _per_layer(m, "attn.hook_pattern", cap.sink_profile),
    "resid_norms": lambda m, p, n: {"hook_embed": cap.norms, **_per_layer(m, "hook_resid_post", cap.norms)},
    "resid_pos01": lambda m, p, n: {"hook_embed": cap.positions([0, 1]),
                                    **_per_layer(m, "hook_resid_post", cap.positions([0, 1]))},
    "resid_probe_positions": lambda m, p, n: _per_layer(m, "hook_resid_post", cap.positions(probe_positions(n))),
    "resid_mean_content": lambda m, p, n: _per_layer(m, "hook_resid_post", _mean_content),
    "resid_all": lambda m, p, n: _per_layer(m, "hook_resid_post", cap.positions(list(range(n)))),
    "mlp_out_content": lambda m, p, n: _per_layer(m, "hook_mlp_out", cap.positions(list(range(1, n)))),
    "z_last": lambda m, p, n: _per_layer(m, "attn.hook_z", cap.positions([n - 1])),
}


@dataclass
class Session:
    settings: Settings = field(default_factory=Settings)
    log: object = print

    def __post_init__(self):
        self._models: dict[str, HookedModel] = {}
        self._cache: dict[tuple, np.ndarray] = {}
        self._prompts: dict[tuple, corpus.PromptSet] = {}
        self._derived: dict[tuple, object] = {}

    # ---- models ---------------------------------------------------------------------------------
    def model(self, name: str) -> HookedModel:
        if name not in self._models:
            spec = get_spec(name)
            s = self.settings
            if spec.group == "tiny":
                hf, tok = random_init_model(spec, s.seed, devices.parse_dtype(s.dtype), s.device), None
            else:
                hf, tok = load_pretrained(spec, devices.parse_dtype(s.dtype), s.device, log=self.log)
            self._models[name] = HookedModel(hf, spec, tok)
        return self._models[name]

    def release(self, name: str) -> None:
        """Drop a model and its cached captures (keeps memory flat across many models)."""
        self._models.pop(name, None)
        for cache in (self._cache, self._derived):
            for key in [k for k in cache if k[0] == name]:
                del cache[key]

    # ---- prompts --------------------------------------------------------------------------------
    def prompts(self, name: str, kind: str = "topic", seq_len: int | None = None,
                n_prompts: int | None = None) -> corpus.PromptSet:
        s = self.settings
        key = (name, kind, seq_len or s.seq_len, n_prompts or s.n_prompts)
        if key not in self._prompts:
            m = self.model(name)
            args = (m.tokenizer, m.spec, key[3], key[2])
            if kind == "topic":
                ps = corpus.topic_prompts(*args, seed=s.seed, source=s.corpus)
            elif kind == "random":
                ps = corpus.random_token_prompts(*args, seed=s.seed)
            else:
                raise ValueError(f"unknown prompt kind {kind!r}")
            self._prompts[key] = ps
        return self._prompts[key]

    def pairs(self, seq_len: int | None = None, kind: str = "stratified") -> PairSet:
        """The (query, key) pairs every prompt and condition shares: stratified by query bin (default)
        or uniform over all causal pairs."""
        s, n = self.settings, seq_len or self.settings.seq_len
        if kind == "stratified":
            return stratified_pairs(n, s.n_pairs, seed=s.seed)
        if kind == "uniform":
            return uniform_pairs(n, s.n_pairs, seed=s.seed)
        raise ValueError(f"unknown pair kind {kind!r}: stratified or uniform")

    def memo(self, key: tuple, compute):
        """A derived result computed once per session (e.g. a probe grid that several claim tests read);
        ``key`` must name everything the result depends on besides the session's settings."""
        if key not in self._derived:
            self._derived[key] = compute()
        return self._derived[key]

    # ---- captures -------------------------------------------------------------------------------
    def measure(self, name: str, prompts: corpus.PromptSet, recipes: tuple[str, ...] | str,
                conditions: tuple[str, ...] = (), interventions=None, tag: str = "",
                pair_kind: str = "stratified", layers: int | None = None) -> dict[str, np.ndarray]:
        """{recipe: array [N, layers(+1), ...]} for the prompts under the named conditions.

        ``interventions`` is an optional callable model -> context manager for ad-hoc interventions;
        give it a distinct ``tag`` so its captures are cached apart. ``layers`` = k reads (and runs)
        only the first k decoder layers."""
        recipes = (recipes,) if isinstance(recipes, str) else tuple(recipes)
        digest = hashlib.sha1(prompts.ids.tobytes()).hexdigest()[:12]
        keys = {r: (name, digest, tuple(conditions), tag, pair_kind, layers, r) for r in recipes}
        missing = [r for r in recipes if keys[r] not in self._cache]
        if missing:
            model = self.model(name)
            pairs = self.pairs(prompts.seq_len, pair_kind)
            readers, layout = {}, {}
            for r in missing:
                for hook_name, reader in RECIPES[r](model, pairs, prompts.seq_len).items():
                    if layers is not None and hook_name.startswith("blocks.") and int(hook_name.split(".")[1]) >= layers:
                        continue
                    readers[f"{r}|{hook_name}"] = (hook_name, reader)
                    layout.setdefault(r, []).append(f"{r}|{hook_name}")
            label = f"{prompts.name} [{'+'.join(conditions) or 'causal'}{'+' + tag if tag else ''}]"
            with apply_condition(model, *conditions):
                ctx = interventions(model) if interventions else contextlib.nullcontext()
                with ctx:
                    raw = cap.capture(model, prompts.ids, readers, self.settings.batch_size, label,
                                      stop_after=None if layers is None else layers - 1)
            for r in missing:
                self._cache[keys[r]] = np.stack([raw[k] for k in layout[r]], axis=1)
        return {r: self._cache[keys[r]] for r in recipes}

