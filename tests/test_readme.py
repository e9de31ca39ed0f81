"""The README's tour runs as written: each ```python block of the
"Tour" section, saved as a file of its own and run in a fresh process with
the default settings (no calibration, no environment variables), prints
the report shown in the text block after it, line for line. Two kinds of
line differ between CPUs and are compared by form: the loads line, which
names the machine profile, and the rows and counts of the table that
``verbose=True`` adds (instructions of the CPU's code). The calls lines are
exact: the tour's arrays are made with ``sj.empty_like`` (no 4K-aliased
source, so nothing runs staged), and where this machine's ``"auto"``
threshold lies above the tour's 64 MiB calls, the line says they ran plain
below it; a kernel that allocates its output may also have run staged,
where the allocator put that array just ahead of its source in a page."""

import os
import re
import subprocess
import sys

import pytest

from helpers import BELOW, STREAMED, TOUR_CALL_BYTES, expected_pattern

README = os.path.join(os.path.dirname(__file__), "..", "README.md")


def tour_blocks():
    """``[(python source, expected output)]`` of the README's tour."""
    with open(README) as f:
        text = f.read()
    tour = text[text.index("\n## Tour\n"):]
    tour = tour[:tour.index("\n### ")]
    blocks = re.findall(r"^```(\w*)\n(.*?)^```$", tour, re.M | re.S)
    pairs = []
    for (lang, source), (out_lang, output) in zip(blocks, blocks[1:]):
        if lang == "python" and out_lang == "":
            pairs.append((source, output))
    return pairs


def test_the_tour_has_runnable_blocks_each_followed_by_its_output():
    pairs = tour_blocks()
    assert len(pairs) == 3 and all("print(" in source for source, _ in pairs)


@pytest.mark.parametrize("index", range(3))
def test_the_tour_runs_as_written_and_prints_what_the_readme_shows(index, tmp_path):
    source, output = tour_blocks()[index]
    path = tmp_path / f"tour_{index + 1}.py"
    path.write_text(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMJIT_")}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(README)))] + [p for p in [env.get("PYTHONPATH")] if p]))
    done = subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.rstrip("\n")
    threshold = subprocess.run([sys.executable, "-c", "from streamjit.machine.threshold import default_threshold; "
                                "print(default_threshold()[0])"], cwd=tmp_path, env=env, capture_output=True,
                               text=True, timeout=600, check=True)
    pattern = expected_pattern(output, int(threshold.stdout))
    assert re.fullmatch(pattern, printed), f"README shows:\n{output}\nthe code prints:\n{printed}"


def test_the_tour_is_compared_line_for_line_but_for_the_loads_line_and_the_table():
    output = tour_blocks()[1][1].rstrip("\n")
    pattern = expected_pattern(output, threshold=0)
    assert re.fullmatch(pattern, output)
    assert not re.fullmatch(pattern, output.replace("fused 2", "fused 3"))
    assert not re.fullmatch(pattern, output.replace("0 plain after", "1 plain after", 1))
    below = expected_pattern(output, threshold=TOUR_CALL_BYTES)
    # (jacobi's call is below such a threshold; saxpy's, at threshold=None, is not)
    assert re.fullmatch(below, output.replace(STREAMED, BELOW, 1))
    assert not re.fullmatch(below, output.replace(STREAMED, BELOW))
    staged = "calls: 0 streamed, 1 streamed through a staging buffer (a source a few bytes behind), 0 plain below"
    assert not re.fullmatch(pattern, output.replace("calls: 1 streamed, 0 plain below", staged, 1))   # (jacobi's)
    head, _, tail = output.rpartition("calls: 1 streamed, 0 plain below")
    assert re.fullmatch(pattern, head + staged + tail)                                          # (saxpy's)
