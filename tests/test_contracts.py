"""The checks on the pipelines: the stream passes' declared contracts over
`StreamFacts` (``REQUIRES``, ``PRODUCES``, ``INVALIDATES``), the pipeline's
order checked against them statically and each run-time check made to fire
by a pass broken on purpose; ``STREAMJIT_VERIFY_EACH`` naming a pass or a
build step that leaves broken code; ``STREAMJIT_DUMP_AFTER`` on the build
list's steps, and ``STREAMJIT_OVERRIDE_AFTER`` running an edited dump."""

import ast
import subprocess
import sys

import numpy as np
import pytest
from numba.core.compiler_machinery import AnalysisPass, _pass_registry

import streamjit as sj
from helpers import checkout_env
from streamjit.kernel import pipeline
from streamjit.passes import accesses, fence_placement, fills, legality
from streamjit.post_o3 import keep_scalar
from streamjit.passes.analysis.facts import FACTS, contract


def unmet(phases):
    """``[(pass, fact)]``: each fact a pass requires that no pass before it
    produced, or one invalidated since (``phases``: the pipeline's lists of
    pass modules; the pipeline itself sets ``options``, and ``typed``
    before the first typed pass)."""
    valid, missing = {"options"}, []
    for typed, modules in phases:
        valid |= {"typed"} if typed else set()
        for module in modules:
            requires, produces, invalidates = contract(module)
            missing += [(pipeline._pass_name(module), f) for f in requires if f not in valid]
            valid = valid - set(invalidates) | set(produces)
    return missing


PHASES = ((False, pipeline.UNTYPED_PASSES), (True, pipeline.TYPED_PASSES), (True, pipeline.LOWERED_PASSES))
MODULES = pipeline.UNTYPED_PASSES + pipeline.TYPED_PASSES + pipeline.LOWERED_PASSES


def test_every_fact_a_pass_requires_is_produced_before_it_and_not_invalidated_since():
    assert unmet(PHASES) == []


def test_the_order_check_finds_a_pass_moved_before_its_producer():
    typed = list(pipeline.TYPED_PASSES)
    typed.remove(accesses)
    typed.insert(typed.index(legality) + 1, accesses)   # legality now reads the scan before it is made
    assert ("legality", "scan") in unmet(((True, typed),))


def test_the_declarations_name_facts_and_every_produced_fact_is_read():
    declared = [f for module in MODULES for part in contract(module) for f in part]
    assert set(declared) <= set(FACTS)
    produced = {f for module in MODULES for f in contract(module)[1]}
    required = {f for module in MODULES for f in contract(module)[0]}
    assert produced <= required


def test_only_passes_that_read_the_ir_register_as_analyses():
    """accesses and legality only read the IR; nothing_streamed runs after lowering, on IR with Numba's dels."""
    classes = pipeline._UNTYPED + pipeline._TYPED + pipeline._LOWERED
    registered = {pipeline._pass_name(m): (_pass_registry.get(cls).analysis_only, _pass_registry.get(cls).mutates_CFG,
                                            issubclass(cls, AnalysisPass)) for m, cls in zip(MODULES, classes)}
    analyses = {"accesses", "legality", "nothing_streamed"}
    assert registered == {name: (name in analyses, name not in analyses, name in analyses) for name in registered}


def copy(dst, src):
    for i in range(src.shape[0]):
        dst[i] = src[i]


def compile_copy():
    a = np.arange(64.0)
    sj.stream_kernel(stream_stores=("dst",))(copy)(np.empty_like(a), a)


def test_a_pass_using_a_fact_it_does_not_declare_is_named(monkeypatch):
    def reads_the_scan(state):
        return state.stream_facts.scan is not None

    monkeypatch.setattr(fills, "run_pass", reads_the_scan)
    with pytest.raises(AssertionError, match="stream pass 'fills' uses the fact 'scan'"):
        compile_copy()


def test_a_pass_requiring_a_fact_invalidated_before_it_is_named(monkeypatch):
    monkeypatch.setattr(accesses, "INVALIDATES", ("store_origin",))
    with pytest.raises(AssertionError, match="stream pass 'legality' requires store_origin"):
        compile_copy()


def test_a_pass_leaving_a_fact_it_produces_unset_is_named(monkeypatch):
    monkeypatch.setattr(accesses, "run_pass", lambda state: False)
    with pytest.raises(AssertionError, match="stream pass 'accesses' left scan unset"):
        compile_copy()


def test_verify_each_names_the_pass_that_broke_the_ir(monkeypatch):
    def drops_a_terminator(state):
        state.func_ir.blocks[min(state.func_ir.blocks)].body.pop()
        return True

    monkeypatch.setattr(fence_placement, "run_pass", drops_a_terminator)
    monkeypatch.setenv("STREAMJIT_VERIFY_EACH", "1")
    with pytest.raises(Exception, match="Numba IR after stream pass 'fence_placement' is invalid: .*Missing "
                                        "block terminator"):
        compile_copy()


def test_verify_each_names_the_stage_that_broke_the_llvm_module(monkeypatch):
    def emits_a_bad_function(module, target):
        module.append("define i32 @streamjit.broken() {\n  ret void\n}")
        return True

    monkeypatch.setattr(keep_scalar, "run", emits_a_bad_function)
    monkeypatch.setenv("STREAMJIT_VERIFY_EACH", "1")
    with pytest.raises(Exception, match="LLVM module after build step 'keep_scalar' is invalid"):
        compile_copy()


def test_verify_each_passes_a_sound_build(monkeypatch):
    monkeypatch.setenv("STREAMJIT_VERIFY_EACH", "1")
    compile_copy()


def test_dump_after_o3_prints_the_optimized_module_before_the_post_o3_stages(monkeypatch, capsys):
    monkeypatch.setenv("STREAMJIT_DUMP_AFTER", "o3")
    compile_copy()
    out = capsys.readouterr().out
    header = "---- streamjit: LLVM IR of "
    dumped = out[out.index(header):]
    assert " after o3 ----" in dumped.splitlines()[0]
    assert "define" in dumped and "streamjit.stream_store:dst" in dumped
    assert "!nontemporal" not in dumped     # (the post-O3 stage `nontemporal` tags the stores afterwards)


# A kernel adding a constant, run in a fresh interpreter: Numba numbers the
# functions it compiles in a process, so an edited dump fits a rerun of the
# program that dumped it.
ADD_SEVEN = """
import numpy as np, streamjit as sj
def add_seven(dst, src):
    for i in range(src.shape[0]):
        dst[i] = src[i] + 7.0
src = np.arange(100.0); dst = np.empty_like(src)
sj.stream_kernel(stream_stores=("dst",))(add_seven)(dst, src)
print("RESULT", (dst - src).tolist())
"""


def run_add_seven(tmp_path, **variables):
    """(stdout before the result line, ``dst - src``) of `ADD_SEVEN` run
    with the environment ``variables``."""
    done = subprocess.run([sys.executable, "-c", ADD_SEVEN], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=checkout_env(**variables))
    assert done.returncode == 0, done.stderr[-3000:]
    printed, _, result = done.stdout.rpartition("RESULT ")
    return printed, ast.literal_eval(result.strip())


@pytest.mark.parametrize("step", ["o3", "nontemporal"])
def test_override_after_a_step_runs_the_edited_dump_of_the_kernels_module(tmp_path, step):
    dumped, differences = run_add_seven(tmp_path, STREAMJIT_DUMP_AFTER=step)
    assert set(differences) == {7.0}
    header = "---- streamjit: LLVM IR of add_seven after " + step + " ----\n"
    module = dumped[dumped.index(header) + len(header):]
    assert "7.000000e+00" in module
    (tmp_path / "edited.ll").write_text(module.replace("7.000000e+00", "9.000000e+00"))
    printed, differences = run_add_seven(tmp_path, STREAMJIT_OVERRIDE_AFTER=f"{step}:edited.ll")
    assert set(differences) == {9.0}
    assert f"LLVM IR of add_seven after {step} replaced by edited.ll" in printed


def test_override_from_a_file_that_is_not_llvm_names_the_step_and_the_file(monkeypatch, tmp_path):
    broken = tmp_path / "broken.ll"
    broken.write_text("define i32 @f() {\n  ret void\n}\n")
    monkeypatch.setenv("STREAMJIT_OVERRIDE_AFTER", f"o3:{broken}")
    with pytest.raises(Exception, match=f"STREAMJIT_OVERRIDE_AFTER: the file '{broken}' given for build step 'o3' "
                                        "is not a valid LLVM module"):
        compile_copy()


def test_override_dumped_in_another_compile_is_not_used_and_says_why(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("STREAMJIT_DUMP_AFTER", "o3")
    compile_copy()
    dumped = capsys.readouterr().out
    (tmp_path / "copy.ll").write_text(dumped[dumped.index("\n") + 1:])
    monkeypatch.delenv("STREAMJIT_DUMP_AFTER")
    monkeypatch.setenv("STREAMJIT_OVERRIDE_AFTER", f"o3:{tmp_path / 'copy.ll'}")
    with pytest.warns(sj.StreamWarning, match="was not used after 'o3' for 'copy': it defines other functions"):
        compile_copy()    # (the same kernel compiled again: Numba numbers its functions anew)


def test_override_naming_no_build_step_warns_with_the_steps(monkeypatch):
    monkeypatch.setenv("STREAMJIT_OVERRIDE_AFTER", "align_peel:x.ll")
    with pytest.warns(sj.StreamWarning, match="'align_peel' names no build step, so nothing is replaced; the "
                                              "steps: loop_widths, o3, keep_scalar"):
        compile_copy()
