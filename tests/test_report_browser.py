"""The committed example report (reports/example/results.json), rebuilt and opened in real headless Chromium: the
title, the totals and the whole claims × models matrix on the first screen, a screenshot of the whole page, no
console or page errors, every image loaded. scripts/setup.sh installs Chromium (Debian: apt-get install -y chromium);
where none is installed the tests skip with the reason, except under CI (``CI`` set, as .ci/run does), where they
fail: the check must run there."""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.long  # headless Chromium runs, a few seconds each

EXAMPLE = ROOT / "reports" / "example" / "results.json"
SCREENSHOT = ROOT / "scripts" / "screenshot_report.sh"
WIDTH = 1400  # the screenshot script's default width; the page is measured at the same width
#: The first screen: a 1,400 × 900 px browser viewport (a 1440 × 900 laptop screen's, about, less the browser's bar).
FIRST_SCREEN = 900
TIMEOUT = 60  # seconds per Chromium run; each takes a few

#: Runs before anything else in the page: records uncaught errors, rejected promises, console.error calls and
#: resources that failed to load; on load, checks every <img> and writes the verdict into <pre id="abspos-check">.
PROBE = """<script>(() => {
  const errors = [];
  addEventListener('error', e => {
    const t = e.target;
    errors.push(t && t !== window && t.tagName ? `${t.tagName.toLowerCase()} failed to load: ${(t.src || t.href || '').slice(0, 80)}`
                                               : `uncaught: ${e.message} (${e.filename}:${e.lineno})`);
  }, true);
  addEventListener('unhandledrejection', e => errors.push(`unhandled rejection: ${e.reason}`));
  const consoleError = console.error.bind(console);
  console.error = (...args) => { errors.push('console.error: ' + args.map(String).join(' ')); consoleError(...args); };
  addEventListener('load', () => {
    const images = [...document.images].map((im, i) => ({i, alt: im.alt, complete: im.complete,
                                                         width: im.naturalWidth, height: im.naturalHeight}));
    const top = el => el ? Math.round(el.getBoundingClientRect().top + scrollY) : null;
    const totals = [...document.querySelectorAll('p')].find(p => /claim tests? on \\d+ models?:/.test(p.textContent));
    let matrix = document.getElementById('matrix');
    while (matrix && matrix.tagName !== 'TABLE') matrix = matrix.nextElementSibling;
    const positions = {title: top(document.querySelector('h1')), totals: top(totals), matrix: top(matrix),
                       matrixEnd: matrix ? top(matrix) + Math.round(matrix.getBoundingClientRect().height) : null};
    const verdict = {errors, images, positions, scrollHeight: document.documentElement.scrollHeight,
                     title: document.title};
    const pre = document.createElement('pre');
    pre.id = 'abspos-check';
    pre.textContent = JSON.stringify(verdict);
    document.body.appendChild(pre);
  });
})();</script>"""


def find_chromium() -> str:
    """The Chromium to use, the same search as scripts/screenshot_report.sh (and scripts/setup.sh's); skips the test
    where there is none, or under CI fails it: setup installs one there, so its absence is a broken setup."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        why = "no chromium on PATH (apt-get install -y chromium): the report is not checked in a browser"
        if os.environ.get("CI"):
            pytest.fail(f"{why}; under CI scripts/setup.sh installs it, so this run's setup is broken", pytrace=False)
        pytest.skip(why)
    return browser


def chrome_flags(profile: Path) -> list[str]:
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--hide-scrollbars",
    ]


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def chromium() -> str:
    return find_chromium()


@pytest.fixture(scope="module")
def example_report(chromium, tmp_path_factory) -> Path:
    """report.html built from the committed example results.json in a fresh folder (figures drawn anew)."""
    pytest.importorskip("matplotlib")
    from harness.report.write import build

    run = tmp_path_factory.mktemp("example-run")
    shutil.copy(EXAMPLE, run / "results.json")
    build(run / "results.json")
    page = run / "report.html"
    assert page.is_file() and page.stat().st_size > 0
    return page


@pytest.fixture(scope="module")
def page_check(chromium, example_report, tmp_path_factory) -> dict:
    """The probe's verdict on a copy of the page, read back from Chromium's --dump-dom."""
    work = tmp_path_factory.mktemp("browser-check")
    page = example_report.read_text(encoding="utf-8")
    head = re.search(r"<head[^>]*>", page, re.I)
    assert head, "report.html has no <head>"
    probed = work / "report.html"  # beside a copy of the figures, so relative links would resolve as they do
    probed.write_text(page[: head.end()] + PROBE + page[head.end() :], encoding="utf-8")
    if (example_report.parent / "figures").is_dir():
        shutil.copytree(example_report.parent / "figures", work / "figures")
    proc = subprocess.run(
        [
            chromium,
            *chrome_flags(work / "profile"),
            f"--window-size={WIDTH},200",
            "--virtual-time-budget=5000",
            "--dump-dom",
            probed.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    found = re.search(r'<pre id="abspos-check">(.*?)</pre>', proc.stdout, re.S)
    assert found, f"the page's check never ran (chromium exit {proc.returncode}); chromium said:\n" + "\n".join(
        proc.stderr.splitlines()[-10:]
    )
    return json.loads(htmllib.unescape(found.group(1)))


def test_report_has_no_console_or_page_errors(page_check):
    assert page_check["errors"] == [], "the report logged errors in Chromium:\n" + "\n".join(page_check["errors"])
    assert page_check["title"], "the page has no title"


def test_the_title_the_totals_and_the_whole_matrix_are_on_the_first_screen(page_check):
    """A researcher sees the answer without scrolling: in a 1,400 px wide window, the title, the totals line and the
    claims × models matrix, to its last row, lie within the first screen (``FIRST_SCREEN``, 900 px), in that order."""
    at = page_check["positions"]
    assert None not in at.values(), at
    assert at["title"] < at["totals"] < at["matrix"] < at["matrixEnd"], at
    assert at["matrixEnd"] <= FIRST_SCREEN, f"the matrix ends at {at['matrixEnd']} px, below the first {FIRST_SCREEN}"


def test_every_image_in_the_report_loads(page_check, example_report):
    images = page_check["images"]
    assert images, "the example report shows no image at all"
    assert len(images) == example_report.read_text(encoding="utf-8").count("<img"), "not every <img> was counted"
    broken = [im for im in images if not (im["complete"] and im["width"] > 0 and im["height"] > 0)]
    assert not broken, f"{len(broken)} of {len(images)} images did not load: " + ", ".join(
        repr(im["alt"]) for im in broken
    )


def test_screenshot_captures_the_whole_page(chromium, example_report, page_check, tmp_path):
    out = tmp_path / "shot" / "report.png"
    env = {
        **os.environ,
        "PATH": os.pathsep.join(
            [str(Path(chromium).parent), str(Path(sys.executable).parent), os.environ.get("PATH", "")]
        ),
    }
    proc = subprocess.run(
        ["bash", str(SCREENSHOT), str(example_report), str(out)],
        capture_output=True,
        text=True,
        timeout=3 * TIMEOUT,
        env=env,
    )
    assert proc.returncode == 0, f"screenshot_report.sh exit {proc.returncode}:\n{proc.stdout}{proc.stderr}"
    assert out.is_file() and out.stat().st_size > 0
    width, height = png_size(out)
    assert proc.stdout.split() == [str(out), f"{width}x{height}"], proc.stdout
    assert width == WIDTH
    page_height = page_check["scrollHeight"]
    assert page_height > 4000, "the example report should be far taller than one 4000-px window"
    if page_height <= 30000:  # the script's default cap
        assert height >= page_height, f"the screenshot is {height} px tall, the page {page_height} px"
        assert "capturing only" not in proc.stderr
    else:
        assert height == 30000 and "capturing only" in proc.stderr


def test_without_chromium_the_browser_checks_skip_with_a_reason_and_fail_under_ci(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no chromium on PATH"):
        find_chromium()
    monkeypatch.setenv("CI", "1")
    with pytest.raises(pytest.fail.Exception, match="under CI scripts/setup.sh installs it"):
        find_chromium()


def run_browser_step(tmp_path: Path, present: bool) -> list[str]:
    """scripts/setup.sh's ``browser`` step run alone, as root, on a PATH of stand-ins: apt-get records its
    arguments, and a chromium is there or not; returns apt-get's calls."""
    script = (ROOT / "scripts" / "setup.sh").read_text()
    functions = [
        script[script.index(f"{f}() {{") : script.index("\n}\n", script.index(f"{f}() {{")) + 3]
        for f in ("quietly", "browser")
    ]
    bin_ = tmp_path / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "apt-get").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "calls"}\n')
    (bin_ / "id").write_text("#!/bin/sh\necho 0\n")  # as root: no sudo
    (bin_ / "env").symlink_to(shutil.which("env"))
    if present:
        (bin_ / "chromium").write_text("#!/bin/sh\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    step = tmp_path / "step.sh"
    step.write_text("set -euo pipefail\nLOG=" + str(tmp_path / "log") + "\n" + "".join(functions) + "browser\n")
    bash = shutil.which("bash")
    proc = subprocess.run([bash, str(step)], env={"PATH": str(bin_)}, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    calls = tmp_path / "calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_setup_installs_a_browser_only_where_there_is_none(tmp_path):
    """The test command's setup (scripts/setup.sh, run by scripts/test.sh and .ci/run) provides the headless browser:
    Debian's chromium through apt-get where none is on PATH, nothing at all where one is (a second run only checks)."""
    assert run_browser_step(tmp_path / "absent", present=False) == ["install -y --no-install-recommends chromium"]
    assert run_browser_step(tmp_path / "present", present=True) == []
    script = (ROOT / "scripts" / "setup.sh").read_text()
    assert script.count("\n  browser\n") == 1 and script.count("\nbrowser\n") == 1  # stamped re-runs and first runs
