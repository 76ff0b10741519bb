#!/usr/bin/env python3
"""Check the exported GBNF grammars with a real GBNF engine (xgrammar).

    pip install --no-deps xgrammar==0.2.9 apache-tvm-ffi && pip install pydantic numpy typing-extensions
    python3 scripts/check-gbnf.py            # runs `cargo test --test grammar write_cases` first
    python3 scripts/check-gbnf.py --no-cargo # reuse target/grammar-check/ as written

The Rust test `write_cases_for_the_gbnf_check` writes the GBNF of both scopes and every text
the grammar tests judge (the shared corpus, the turns, examples/, the syntax-error fixtures,
generated documents and mutations of them) with the parser's verdict. This script compiles each
GBNF with xgrammar and asserts xgrammar's verdict equals the parser's on every case.

xgrammar's Python package imports torch, transformers and triton for its token-mask kernels and
tokenizer adapters. Grammar parsing and string matching do not use them, so they are replaced
by inert stand-ins here rather than installing several GB of CUDA wheels.
Exit 0 when every case agrees, 1 on any disagreement, 2 when xgrammar is missing.
"""

import json
import pathlib
import subprocess
import sys
import types

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "target" / "grammar-check"


def import_xgrammar():
    try:
        import tvm_ffi  # noqa: F401  (probes for torch itself; load it before the stand-ins)
    except ImportError:
        return None

    class _Any:
        def __init__(self, *a, **k):
            pass

        def __getattr__(self, n):
            return _Any()

        def __call__(self, *a, **k):
            return _Any()

        def __getitem__(self, k):
            return _Any()

        def __or__(self, o):
            return _Any()

        __ror__ = __or__

    class _Mod(types.ModuleType):
        def __getattr__(self, n):
            if n.startswith("__"):
                raise AttributeError(n)
            if n[:1].isupper():
                return type(n, (), {})
            return _Any()

    for name in ["torch", "torch.utils", "torch.utils.cpp_extension", "transformers", "triton",
                 "triton.language"]:
        sys.modules.setdefault(name, _Mod(name))
    try:
        import xgrammar
        from xgrammar.testing import _is_grammar_accept_string
    except ImportError:
        return None
    return xgrammar, _is_grammar_accept_string


def main():
    if "--no-cargo" not in sys.argv:
        subprocess.run(
            ["cargo", "test", "-q", "--test", "grammar", "write_cases"], cwd=ROOT, check=True
        )
    xg = import_xgrammar()
    if xg is None:
        print("check-gbnf: xgrammar is not installed (see the docstring)", file=sys.stderr)
        return 2
    xgrammar, accepts = xg
    grammars = {}
    for scope in ("turn", "file"):
        text = (OUT / f"kestrel-{scope}.gbnf").read_text()
        grammars[scope] = xgrammar.Grammar.from_ebnf(text, root_rule_name="root")
    passed = failed = 0
    for line in (OUT / "cases.jsonl").read_text().split("\n"):
        if not line:
            continue
        case = json.loads(line)
        got = bool(accepts(grammars[case["scope"]], case["text"]))
        if got == case["accept"]:
            passed += 1
        else:
            failed += 1
            print(f"DISAGREE scope={case['scope']} parser={case['accept']} xgrammar={got}: "
                  f"{case['text']!r}")
    print(f"gbnf: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
