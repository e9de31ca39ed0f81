"""`post_o3/stages.py`: the one ordered list of post-O3 stages, each named
for ``STREAMJIT_DUMP_AFTER``."""

from llvm_fixtures import X86, fixture_text

from streamjit.post_o3.stages import STAGE_NAMES, run_post_o3


def test_the_stages_in_order():
    assert STAGE_NAMES == ("keep_scalar", "vector_math", "stream_memset", "widen_stores", "nontemporal",
                           "pair_nontemporal", "prefetch", "exit_fences", "array_pool")


def test_dump_after_a_stage_prints_the_module_after_it(monkeypatch, capsys):
    monkeypatch.setenv("STREAMJIT_DUMP_AFTER", "nontemporal")
    module, changed = run_post_o3(fixture_text("triad_f32.ll"), X86, "triad")
    out = capsys.readouterr().out
    assert changed and out.count("---- streamjit: LLVM IR of triad after nontemporal ----") == 1
    printed = out.split("----\n", 1)[1]
    # after nontemporal, before prefetch
    assert "!nontemporal" in printed and "@llvm.prefetch" not in printed and "@llvm.prefetch" in str(module)


def test_a_module_without_marks_is_not_dumped(monkeypatch, capsys):
    monkeypatch.setenv("STREAMJIT_DUMP_AFTER", "all")
    text = fixture_text("triad_f32.ll").replace('!"streamjit', '!"elsewhere')
    module, _ = run_post_o3(text, X86)
    assert capsys.readouterr().out == "" and "!nontemporal" not in str(module)
