"""MkDocs hook: the "How it works" page is generated from the code, not
written by hand. ``<!-- streamjit:how-it-works -->`` in a page becomes the
pass list of `streamjit/kernel/pipeline.py` (its ``UNTYPED_PASSES``,
``TYPED_PASSES`` and ``LOWERED_PASSES``, in order) and the stage list of
`streamjit/post_o3/stages.py` (``STAGES``), each pass and stage with its
module's docstring, and the package's folders with the first paragraph of
each one's docstring; so a pass added, removed or reordered shows on the
site at the next build."""

import ast
import importlib
import inspect
import pkgutil
import re
from pathlib import Path

MARKER = "<!-- streamjit:how-it-works -->"

# where each list of pipeline.py runs in Numba's nopython pipeline
PHASES = (
    ("UNTYPED_PASSES", "Untyped Numba IR, right after Numba inlines `inline=\"always\"` helpers"),
    ("TYPED_PASSES", "Typed Numba IR, after type inference, before Numba's rewrites and parfors"),
    ("LOWERED_PASSES", "After Numba's lowering, on the optimized module the post-O3 stages left"),
)


def _markdown(doc):
    """A docstring as Markdown: reStructuredText's double backticks are
    Markdown code spans already; a ``<`` outside code would start an HTML
    tag, and a ``#`` opening a line a heading, so both are escaped there."""
    out, in_code, blank = [], False, True
    for line in inspect.cleandoc(doc or "").splitlines():
        if line.startswith("    ") and (blank or in_code):
            in_code = True
        elif line.strip():
            in_code = False
        if not in_code:
            parts = re.split(r"(``.*?``|`[^`]*`)", line)
            line = "".join(p if p.startswith("`") else p.replace("<", "&lt;") for p in parts)
            line = "\\" + line if line.startswith("#") else line
        out.append(line)
        blank = not line.strip()
    return "\n".join(out)


def _source_path(module):
    return module.__name__.replace(".", "/") + ".py"


def _first_paragraph(doc):
    return _markdown(doc).split("\n\n")[0].replace("\n", " ")


def how_it_works():
    """The generated Markdown."""
    pipeline = importlib.import_module("streamjit.kernel.pipeline")
    stages = importlib.import_module("streamjit.post_o3.stages")
    lines = ["## The passes over Numba IR", "",
             f"In the order `streamjit/kernel/pipeline.py` runs them (its docstring: `{_first_paragraph(pipeline.__doc__)}`). "
             "`STREAMJIT_DUMP_AFTER=<pass name>` (or `all`) prints the IR after a pass.", ""]
    number = 0
    for attribute, where in PHASES:
        lines += [f"### {where}", ""]
        for module in getattr(pipeline, attribute):
            number += 1
            name = module.__name__.rsplit(".", 1)[-1]
            lines += [f"#### {number}. `{name}`", "", f"*`{_source_path(module)}`*", "", _markdown(module.__doc__), ""]
    widths = importlib.import_module("streamjit.pre_o3.loop_widths")
    lines += ["## The pre-O3 stage", "", f"*`{_source_path(widths)}`*", "", _markdown(widths.__doc__), ""]
    lines += ["## The post-O3 stages", "",
              _markdown(stages.__doc__).split("\n\n")[0], "",
              "`STREAMJIT_DUMP_AFTER=<stage name>` prints the LLVM module after a stage; "
              "`STREAMJIT_OVERRIDE_AFTER=<stage name>:<path.ll>` replaces the kernel's module after it "
              "with the file's.", ""]
    for number, module in enumerate(stages.STAGES, 1):
        lines += [f"### {number}. `{stages.stage_name(module)}`", "", f"*`{_source_path(module)}`*", "",
                  _markdown(module.__doc__), ""]
    root = Path(importlib.import_module("streamjit").__file__).parent
    lines += ["## The package", "", "Each module and folder of `streamjit/`, with the first paragraph of its "
              "docstring (read from the source, not imported: some need optional packages):", ""]
    for info in sorted(pkgutil.iter_modules([str(root)]), key=lambda m: (not m.ispkg, m.name)):
        if info.name.startswith("_"):
            continue
        source = root / info.name / "__init__.py" if info.ispkg else root / f"{info.name}.py"
        path = f"streamjit/{info.name}/" if info.ispkg else f"streamjit/{info.name}.py"
        lines.append(f"- `{path}`: {_first_paragraph(ast.get_docstring(ast.parse(source.read_text())))}")
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown, page, config, files):
    """Replace the marker with the generated text (MkDocs event)."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, how_it_works())
    return markdown
