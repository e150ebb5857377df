"""The paper's models' own tokenizers, built from the files that ship them: no hub, no weights.

- Llama 3 (llama-3.2-1b, llama-3.2-3b, llama-3.1-8b): Meta's tiktoken BPE ``llama_models/llama3/tokenizer.model``
  (from the llama-models 0.3.0 wheel, ``harness.model.tokenizer_files``), converted by transformers'
  ``TikTokenConverter`` with Meta's split pattern and the 256 special tokens Meta's own Llama 3 tokenizer names
  (``LLAMA3_SPECIAL``; 128,256 tokens in all); ``<|begin_of_text|>`` (128000) is prepended, as the Hugging Face
  tokenizer's post-processor does.
- Mistral v3 (mistral-7b-v0.3): the sentencepiece BPE ``mistral_common/data/mistral_instruct_tokenizer_240323.model.v3``
  (from the mistral-common 1.13.1 wheel, 32,768 pieces) with sentencepiece's own whitespace handling (transformers'
  ``legacy=True``) and ``<s>`` (1) prepended. mistral-common has since renamed 24 of its control pieces; they get back
  the names Mistral-7B-v0.3's tokenizer gives them (``_v3_control_names``).
- Qwen2.5 (qwen-2.5-3b): the byte-level BPE inside the bundled Qwen2.5-Coder GGUF (Qwen2.5-3B's vocabulary and
  merges), as transformers reads it, less the GGUF's 271 ``[PAD…]`` placeholders: 151,643 tokens and 22 special ones,
  no BOS. Qwen2.5-3B's embedding has 151,936 rows (its config's vocab_size), padding included.

Each is built once into ``<cache>/tokenizers/<source>-<fingerprint>``, written aside and swapped into place, verified
on every load (``harness.model.cache``), and read from there afterwards. ``save_paper_tokenizer`` copies those files
into a model folder, where ``AutoTokenizer.from_pretrained`` reads them.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from harness.model import cache, tokenizer_files, weights
from harness.model.tokenizer_files import TokenizerUnavailable
from harness.spec.models import (
    ModelSpec,
    UnknownModelError,
    WeightsUnavailable,
    get_spec,
)
from harness.spec.paper_models import PAPER_MODELS

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerFast

FORMAT = 1  # bump when a build changes: every cached tokenizer is built again
SOURCE = {p.spec.name: p.tokenizer for p in PAPER_MODELS}  # each paper model's published tokenizer (its declaration)
QWEN_GGUF = "qwen2.5-coder-0.5b"  # the bundled model whose GGUF carries Qwen2.5's tokenizer
# import name -> PyPI name of the packages each source is read with (its data file: harness.model.tokenizer_files)
NEEDS = {
    "llama3": {"tiktoken": "tiktoken"},
    "mistral-v3": {"sentencepiece": "sentencepiece", "google.protobuf": "protobuf"},
    "qwen2.5": {"gguf": "gguf"},
}
#: Meta's Llama 3 split pattern and its 256 special tokens, ids 128000-128255 in this order (llama-models 0.3.0,
#: llama_models/llama3/tokenizer.py: twelve named ones, then <|reserved_special_token_2|> ... _245|>)
LLAMA3_PATTERN = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
LLAMA3_SPECIAL = [
    *("<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>", "<|reserved_special_token_1|>"),
    *("<|finetune_right_pad_id|>", "<|step_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>"),
    *("<|eot_id|>", "<|python_tag|>", "<|image|>"),
    *(f"<|reserved_special_token_{2 + i}|>" for i in range(256 - 12)),
]


def source(name: str) -> str:
    """The tokenizer a paper model uses (the three Llamas share one); a one-line error for any other model."""
    if name not in SOURCE:
        raise UnknownModelError(f"no paper tokenizer for {name!r}: the paper's models are {', '.join(SOURCE)}")
    return SOURCE[name]


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a dotted name whose parent package is missing
        return False


def check_packages(name: str) -> None:
    """TokenizerUnavailable (one line) unless every package the model's tokenizer is read with is installed and its
    data file is in the cache (``harness.model.tokenizer_files``; the Qwen2.5 GGUF: its package)."""
    key = source(name)
    missing = [pip for module, pip in NEEDS[key].items() if not _installed(module)]
    if missing:
        raise TokenizerUnavailable(
            f"{name}: its tokenizer ({key}) needs the Python package(s) {', '.join(missing)}, not installed here: "
            f"run `bash scripts/setup.sh` (or `pip install {' '.join(missing)}`)"
        )
    if key in tokenizer_files.FILES:
        try:
            tokenizer_files.path(key)
        except TokenizerUnavailable as e:
            raise TokenizerUnavailable(f"{name}: {e}") from None
    if key == "qwen2.5":
        try:
            weights.ensure_available(get_spec(QWEN_GGUF))
        except WeightsUnavailable as e:
            raise TokenizerUnavailable(
                f"{name}: its tokenizer is read from the bundled {QWEN_GGUF} GGUF: {e}"
            ) from None


def _versions(key: str) -> list[str]:
    """What a build depends on: its data file's sha256 (or the GGUF's packages' versions), the converters' versions."""
    dists = [pip for module, pip in NEEDS[key].items() if "." not in module]
    if key == "qwen2.5":
        dists += [p.replace("_", "-") for p in get_spec(QWEN_GGUF).gguf["packages"]]
    data = [f"sha256={tokenizer_files.FILES[key].sha256}"] if key in tokenizer_files.FILES else []
    return data + [f"{d}=={importlib.metadata.version(d)}" for d in [*dists, "transformers", "tokenizers"]]


def fingerprint(name: str) -> str:
    key = source(name)
    return hashlib.sha256(":".join([str(FORMAT), key, *_versions(key)]).encode()).hexdigest()[:16]


def tokenizer_folder(name: str, log=print) -> Path:
    """The cached folder holding a paper model's tokenizer, built on first use (one build shared by the models of a
    source); a damaged folder is built again (``harness.model.cache.ensure``)."""
    check_packages(name)
    key, digest = source(name), fingerprint(name)
    folder = weights.cache_root() / "tokenizers" / f"{key}-{digest}"
    spec = get_spec(name)

    def build(into: Path) -> None:
        log(f"[abspos] building the {key} tokenizer of {name} (one-time, cached in {folder}) ...")
        BUILDERS[key](spec).save_pretrained(into)

    return cache.ensure(folder, digest, build, log, what=f"{key} tokenizer", note={"source": key, "built_for": name})


def save_paper_tokenizer(name: str, folder: str | Path, log=print) -> list[Path]:
    """Write a paper model's tokenizer files into ``folder`` (created if needed), where
    ``AutoTokenizer.from_pretrained(folder)`` reads them; the paths written."""
    cached, folder = tokenizer_folder(name, log), Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sorted(cached.iterdir()):
        if path.name != cache.MARKER:
            written.append(Path(shutil.copyfile(path, folder / path.name)))
    return written


def build_llama3(spec: ModelSpec) -> PreTrainedTokenizerFast:
    """Meta's tiktoken file converted by transformers, the special tokens as Meta names them, BOS prepended."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast
    from transformers.convert_slow_tokenizer import TikTokenConverter

    path, names = tokenizer_files.path("llama3"), LLAMA3_SPECIAL
    backend = TikTokenConverter(vocab_file=str(path), pattern=LLAMA3_PATTERN, extra_special_tokens=names).converted()
    special = {n: 128000 + i for i, n in enumerate(names)}  # after the 128,000 BPE tokens
    moved = [n for n in names if backend.token_to_id(n) != special[n]]
    if moved:
        raise ValueError(f"{spec.name}: special token {moved[0]} is not at id {special[moved[0]]} after conversion")
    bos, eos = "<|begin_of_text|>", "<|end_of_text|>"
    template = processors.TemplateProcessing(
        single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1", special_tokens=[(bos, special[bos])]
    )
    backend.post_processor = processors.Sequence([processors.ByteLevel(trim_offsets=False), template])
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=bos,
        eos_token=eos,
        model_max_length=spec.context,
        clean_up_tokenization_spaces=False,
    )


#: The pieces mistral-common renamed after Mistral-7B-v0.3 shipped (mistral-common 1.0's v3 file and the model's
#: Hugging Face tokenizer name them [control_<id - 2>], all control tokens).
V3_RENAMED = {
    **dict(zip(range(10, 14), ("[IMG]", "[PREFIX]", "[MIDDLE]", "[SUFFIX]"))),
    **{751 + k: f"[REFERENCE_DOC_{19 - k}]" for k in range(20)},
}


def _v3_control_names(data: bytes) -> bytes:
    """The sentencepiece model with the renamed pieces named and typed as in Mistral-7B-v0.3's tokenizer; every other
    piece, score and setting as shipped (checked: then its pieces are those of mistral-common 1.0.0's v3 file)."""
    from transformers.convert_slow_tokenizer import import_protobuf

    proto = import_protobuf().ModelProto()
    proto.ParseFromString(data)
    for i, renamed in V3_RENAMED.items():
        piece, original = proto.pieces[i], f"[control_{i - 2}]"
        if piece.piece not in (renamed, original):
            raise ValueError(f"mistral v3 tokenizer: piece {i} is {piece.piece!r}, neither {renamed} nor {original}")
        piece.piece, piece.type = original, 3  # sentencepiece's ModelProto.SentencePiece.CONTROL
    return proto.SerializeToString()


def build_mistral_v3(spec: ModelSpec) -> PreTrainedTokenizerFast:
    """The sentencepiece model converted by transformers with sentencepiece's whitespace handling, BOS prepended."""
    from transformers import PreTrainedTokenizerFast

    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "tokenizer.model"  # transformers converts a sentencepiece file by its .model name
        model.write_bytes(_v3_control_names(tokenizer_files.path("mistral-v3").read_bytes()))
        kwargs = PreTrainedTokenizerFast.convert_to_native_format(vocab_file=str(model), legacy=True)
    kwargs.pop("vocab_file", None)
    if kwargs.get("tokenizer_object") is None:
        raise ValueError(f"{spec.name}: transformers did not convert the sentencepiece model")
    return PreTrainedTokenizerFast(**kwargs, add_bos_token=True, add_eos_token=False, model_max_length=spec.context)


def _without_padding(tokenizer: dict) -> dict:
    """A GGUF-read Qwen2.5 tokenizer (its JSON) as Qwen2.5's own: the BPE vocabulary below the first added token,
    the added tokens apart, the GGUF's [PAD<id>] placeholders after the last one dropped."""
    added = sorted(t["id"] for t in tokenizer["added_tokens"])
    vocab = tokenizer["model"]["vocab"]
    padding = {t: i for t, i in vocab.items() if i > added[-1]}
    odd = [t for t, i in padding.items() if t != f"[PAD{i}]"]
    if odd or added != list(range(added[0], added[-1] + 1)):
        raise ValueError(f"unexpected Qwen2.5 GGUF vocabulary: {odd[0] if odd else 'added tokens not contiguous'}")
    model = dict(tokenizer["model"], vocab={t: i for t, i in vocab.items() if i < added[0]})
    return dict(tokenizer, model=model)


def build_qwen25(spec: ModelSpec) -> PreTrainedTokenizerFast:
    """Qwen2.5's byte-level BPE as transformers reads it from the bundled GGUF, without padding, no BOS."""
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    gguf = weights.bundled_gguf(get_spec(QWEN_GGUF))
    with cache.no_progress_bars():
        read = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name, trust_remote_code=False)
    backend = Tokenizer.from_str(json.dumps(_without_padding(json.loads(read.backend_tokenizer.to_str()))))
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|endoftext|>",  # the base model's (the instruct GGUF's is <|im_end|>)
        pad_token="<|endoftext|>",
        model_max_length=spec.context,
        clean_up_tokenization_spaces=False,
    )


BUILDERS: dict[str, Callable[[ModelSpec], PreTrainedTokenizerFast]] = {
    "llama3": build_llama3,
    "mistral-v3": build_mistral_v3,
    "qwen2.5": build_qwen25,
}
