"""A run folder is the artifact (CI uploads it alone): every relative link and image in its report.html and
report.md, and in the methods page they open, resolves inside the folder, anchor included, once the folder is copied
anywhere else."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "reports" / "example" / "results.json"
pytestmark = pytest.mark.long  # the example's report and figures built anew (about half a minute)

HREF = re.compile(r'\b(?:href|src)="([^"]*)"')
MD_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """The ids a page's links can land on: id="..." (HTML) and <a id="..."> (Markdown)."""
    return set(re.findall(r'\bid="([^"]+)"', page.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def moved(tmp_path_factory) -> Path:
    """The example's run folder built in one place and copied, alone, to another (the first removed)."""
    from harness.report.write import build

    built = tmp_path_factory.mktemp("built") / "run-example"
    built.mkdir()
    shutil.copy(EXAMPLE, built / "results.json")
    build(built / "results.json")
    elsewhere = tmp_path_factory.mktemp("artifact") / "downloaded" / "run-example"
    shutil.copytree(built, elsewhere)
    shutil.rmtree(built)
    return elsewhere


def targets(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    found = HREF.findall(text) if page.suffix == ".html" else MD_LINK.findall(text)
    return [html.unescape(t) for t in found]


@pytest.mark.parametrize("page", ["report.html", "report.md", "methods.html", "methods.md"])
def test_every_relative_link_resolves_inside_the_run_folder(moved, page):
    source = moved / page
    assert source.is_file(), f"{page} is not written into the run folder"
    links = targets(source)
    relative = [t for t in links if not urlsplit(t).scheme and not t.startswith("//")]
    if page.startswith("report"):
        assert sum("methods." in t for t in relative) >= 20, "the report links each claim to its decision"
    broken = []
    for t in relative:
        parts = urlsplit(t)
        target = (source.parent / unquote(parts.path)).resolve() if parts.path else source
        if not target.is_file() or moved.resolve() not in target.parents:
            broken.append(f"{t} (no such file in the folder)")
        elif parts.fragment and parts.fragment not in anchors(target):
            broken.append(f"{t} (no anchor #{parts.fragment} in {target.name})")
    assert not broken, f"{len(broken)} of {len(relative)} links in {page} land nowhere: " + "; ".join(broken[:5])


def test_the_methods_page_gives_each_claim_its_decision(moved):
    from harness.spec.claims import CLAIMS

    page = (moved / "methods.html").read_text(encoding="utf-8")
    claims = {r for r in re.findall(r'"claim": "([^"]+)"', (moved / "results.json").read_text())}
    for cid in claims:
        c = CLAIMS[cid]
        assert f'id="decision-{cid.lower()}"' in page
        for test in c.claim_tests:
            assert html.escape(test) in page, f"{cid}: {test} is not on the methods page"


@pytest.mark.parametrize("folder", ["example", "example-ladder"])
@pytest.mark.parametrize("page", ["report.html", "report.md"])
def test_the_committed_reports_links_resolve_inside_their_folders(folder, page):
    """The committed example folders are what a reader downloads: they carry their methods page too."""
    source = ROOT / "reports" / folder / page
    relative = [t for t in targets(source) if not urlsplit(t).scheme and not t.startswith("//")]
    broken = []
    for t in relative:
        parts = urlsplit(t)
        target = (source.parent / unquote(parts.path)).resolve() if parts.path else source
        if not target.is_file() or source.parent.resolve() not in target.parents:
            broken.append(t)
        elif parts.fragment and parts.fragment not in anchors(target):
            broken.append(t)
    assert relative and not broken, (
        f"{len(broken)} of {len(relative)} links in {folder}/{page} land nowhere: {broken[:5]}"
    )
