"""Marks on LLVM memory instructions that must survive LLVM's optimizer.

A streamed store is emitted as an ordinary store carrying an `!alias.scope`
in a domain of our own. The loop vectorizer drops unknown metadata kinds but
keeps alias scopes on the vector instructions it creates, and since no
instruction lists our scope in `!noalias`, the mark changes no aliasing
decision. After optimization, `nontemporal.py` finds the marked vector
stores and makes them non-temporal.
"""

import llvmlite.ir as llir

DOMAIN_NAME = "streamjit"
STREAM_STORE_SCOPE = "streamjit.stream_store"


def mark_streamed_store(builder, instruction):
    """Tag a store instruction as a candidate for a non-temporal store."""
    module = builder.module
    domain = module.add_metadata([llir.MetaDataString(module, DOMAIN_NAME)])
    scope = module.add_metadata([llir.MetaDataString(module, STREAM_STORE_SCOPE), domain])
    instruction.set_metadata("alias.scope", module.add_metadata([scope]))
