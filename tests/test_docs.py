"""The documentation's examples run as written: each page of docs/ with
```python blocks is saved as one script (its blocks in order, as a reader
runs them one after the other) and run in a fresh process with the default
settings (no calibration, no environment variables). Where a ```text block
follows a ```python block, what that block prints must match it, compared
as tests/test_readme.py compares the README's tour (counts that depend on
the CPU by form only). ```console blocks are shown, not run. A page whose
examples need an optional package (numba-cuda, Dask) is skipped without
it."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import expected_pattern

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SEPARATOR = "----- streamjit docs: end of block -----"
# a page that uses one of these needs the package
NEEDS = {'target="cuda"': "numba_cuda", "import dask": "dask"}


def page_blocks(path):
    """``[(python source, expected output or None)]`` of one page, in order."""
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", path.read_text(), re.M | re.S)
    pairs = []
    for i, (lang, source) in enumerate(blocks):
        if lang == "python":
            following = blocks[i + 1] if i + 1 < len(blocks) else None
            pairs.append((source, following[1] if following and following[0] == "text" else None))
    return pairs


PAGES = [p for p in sorted(DOCS.rglob("*.md")) if page_blocks(p)]


def test_the_guide_has_examples_with_their_output():
    assert len(PAGES) >= 8
    assert sum(expected is not None for p in PAGES for _, expected in page_blocks(p)) >= 15


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(DOCS)) for p in PAGES])
def test_the_page_runs_as_written_and_prints_what_it_shows(page, tmp_path):
    text = page.read_text()
    for needle, package in NEEDS.items():
        if needle in text and importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed")
    pairs = page_blocks(page)
    script = tmp_path / ("docs_" + page.stem.replace("-", "_") + ".py")  # (not "dask.py": it would shadow Dask)
    script.write_text("".join(f"{source}\nprint({SEPARATOR!r})\n" for source, _ in pairs))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMJIT_")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p]))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.split(SEPARATOR + "\n")
    assert len(printed) == len(pairs) + 1
    for n, ((source, expected), out) in enumerate(zip(pairs, printed), 1):
        if expected is not None:
            out = out.rstrip("\n")
            assert re.fullmatch(expected_pattern(expected), out), \
                f"{page.name}, block {n} shows:\n{expected}\nthe code prints:\n{out}"


def test_how_it_works_lists_every_pass_and_stage_in_order():
    """The page is generated from the pass and stage lists (docs/hooks.py),
    so each pass and stage appears, in the order they run."""
    sys.path.insert(0, str(DOCS))
    try:
        import hooks
    finally:
        sys.path.remove(str(DOCS))
    from streamjit.kernel import pipeline
    from streamjit.post_o3 import stages

    text = hooks.how_it_works()
    names = [m.__name__.rsplit(".", 1)[-1] for m in pipeline.UNTYPED_PASSES + pipeline.TYPED_PASSES
             + pipeline.LOWERED_PASSES]
    headings = re.findall(r"^#### \d+\. `(\w+)`$", text, re.M)
    assert headings == names
    assert re.findall(r"^### \d+\. `(\w+)`$", text, re.M) == list(stages.STAGE_NAMES)


def headings_of_level_one(markdown):
    """The lines of ``markdown`` outside fenced code that Python-Markdown
    renders as ``<h1>``: a line opening with one ``#`` (no space needed)."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#(?!#)", line):
            lines.append(line)
    return lines


def test_every_page_has_one_title_as_served():
    """Each page, after docs/hooks.py generated its text, has exactly one
    ``<h1>``: a docstring line opening with ``#`` would add another."""
    sys.path.insert(0, str(DOCS))
    try:
        import hooks
    finally:
        sys.path.remove(str(DOCS))
    for page in sorted(DOCS.rglob("*.md")):
        served = hooks.on_page_markdown(page.read_text(), page=None, config=None, files=None)
        assert len(headings_of_level_one(served)) == 1, (page, headings_of_level_one(served))
    assert headings_of_level_one("# Title\n```\n# a comment\n```\n#7534, an issue\n## Part") == ["# Title",
                                                                                                  "#7534, an issue"]
    assert hooks._markdown("text\n#7534 opens a line") == "text\n\\#7534 opens a line"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason='pip install ".[docs]"')
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr
