#!/usr/bin/env python3
"""Turn the test tables of cel-go's extension libraries into kiln's case list (extract.py's format).

Usage: extract_celgo.py CEL_GO_CHECKOUT > core/tests/cel_spec/celgo_ext.jsonl

CEL_GO_CHECKOUT is a git directory of github.com/google/cel-go; the cases come from its HEAD, whose
commit is written on the first line. Read are the first table of each test named below: entries
`{expr: E}` (E must evaluate to true) and `{expr: E, err: M}` (E must fail). The strings extension's
table is replayed separately (testdata/render/celgo-strings); cel-spec's files cover the
bindings, math and encoders extensions and optionals.
"""

import json
import re
import subprocess
import sys

TABLES = [
    ("ext/lists_test.go", "TestLists"),
    ("ext/comprehensions_test.go", "TestTwoVarComprehensions"),
    ("ext/encoders_test.go", "TestEncoders"),
]

GO_STRING = r'(`[^`]*`|"(?:[^"\\]|\\.)*")'
ENTRY = re.compile(r"\{\s*expr:\s*" + GO_STRING + r"\s*(?:,\s*err:\s*" + GO_STRING + r")?\s*,?\s*\}", re.S)
PROTO = re.compile(r"TestAllTypes|ExampleType|google\.protobuf|proto[23]?pb|\bproto[23]?\.")


def go_string(lit):
    if lit.startswith("`"):
        return lit[1:-1]
    return json.loads(lit)


def main():
    gitdir = sys.argv[1]

    def git(*args):
        return subprocess.run(["git", "--git-dir", gitdir, *args], check=True,
                              capture_output=True).stdout.decode("utf-8")

    commit = git("rev-parse", "HEAD").strip()
    print(json.dumps({"source": "github.com/google/cel-go ext/*_test.go tables", "commit": commit, "licence": "Apache-2.0 (cel-go); the cases are test inputs and expected results, rewritten into this form"}))
    for path, func in TABLES:
        src = git("show", f"HEAD:{path}")
        start = src.index(f"func {func}(")
        # The table is the first composite literal of the function; it ends where the loop over
        # it begins.
        end = src.index("for ", start)
        seen = {}
        for m in ENTRY.finditer(src, start, end):
            # Some expressions span lines and carry `//` comments: keep their lines; the id is
            # the expression on one line.
            expr = go_string(m.group(1)).strip()
            flat = " ".join(expr.split())
            n = seen[flat] = seen.get(flat, 0) + 1
            name = flat if n == 1 else f"{flat} #{n}"
            case = {"id": f"{path}/{func}/{name}", "expr": expr}
            if PROTO.search(expr):
                case["skip"] = "protocol buffer messages (kro's environment has no proto types)"
            elif m.group(2) is not None:
                case["error"] = go_string(m.group(2))
            else:
                case["value"] = {"bool": True}
            print(json.dumps(case, ensure_ascii=False, sort_keys=True))


if __name__ == "__main__":
    main()
