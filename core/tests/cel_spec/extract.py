#!/usr/bin/env python3
"""Turn cel-spec's conformance tests (tests/simple/testdata/*.textproto) into kiln's own case list.

Usage: extract.py CEL_SPEC_CHECKOUT > core/tests/cel_spec/cases.jsonl

CEL_SPEC_CHECKOUT is a git directory of github.com/google/cel-spec (a bare one works); the cases come
from its HEAD, whose commit is written on the first line. The output is one JSON object per line, read
by core/tests/cel_spec_conformance.rs; nothing here is needed to build or test kiln.

Each case: {"id": "file/section/test", "expr": ..., "bindings": {name: value}, then one of
"value": V (the expected result), "error": "message" (any evaluation error is expected), or
"skip": "reason" (a feature kiln's environment, like kro's, does not have)}.

A value V is {"int": "5"}, {"uint": "5"}, {"double": "1.5" | "NaN" | "Infinity" | "-Infinity"},
{"string": s}, {"bytes": hex}, {"bool": b}, {"null": true}, {"list": [V...]},
{"map": [[V, V]...]} or {"type": "int"}.
"""

import json
import re
import subprocess
import sys

# Files whose subject is not in kro's CEL environment at all; every case is listed as skipped.
SKIPPED_FILES = {
    "proto2": "protocol buffer messages (kro's environment has no proto types)",
    "proto3": "protocol buffer messages (kro's environment has no proto types)",
    "proto2_ext": "protocol buffer extensions (kro's environment has no proto types)",
    "enums": "protocol buffer enums (kro's environment has no proto types)",
    "wrappers": "protocol buffer wrapper types (kro's environment has no proto types)",
    "dynamic": "protocol buffer well-known types (Struct, Value, Any, wrappers)",
    "unknowns": "unknown values (partial evaluation); kiln evaluates complete inputs only",
    "block_ext": "cel.block (cel-go's internal common-subexpression form, not in kro's environment)",
    "network_ext": "cel-go's network extension; kiln has Kubernetes' ip/cidr library instead, "
    "replayed from k8s.io/apiserver (testdata/render/k8s-cel-*)",
}

TOKEN = re.compile(
    r"""\s+|\#[^\n]*|(?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')"""
    r"""|(?P<punct>[{}\[\]:,;<>])|(?P<word>[A-Za-z0-9_.+\-/]+)"""
)


def tokens(text):
    pos = 0
    out = []
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if not m:
            raise SystemExit(f"cannot tokenise at {text[pos:pos+40]!r}")
        pos = m.end()
        if m.group("str") is not None:
            out.append(("str", unescape(m.group("str")[1:-1])))
        elif m.group("punct") is not None:
            out.append(("p", m.group("punct")))
        elif m.group("word") is not None:
            out.append(("w", m.group("word")))
    return out


def unescape(body):
    """A text-format string literal's bytes (C-style escapes, octal, hex, \\u)."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        n = body[i + 1]
        simple = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11, "\\": 92, "'": 39,
                  '"': 34, "?": 63}
        if n in simple:
            out.append(simple[n])
            i += 2
        elif n in "01234567":
            j = i + 1
            while j < len(body) and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8))
            i = j
        elif n in "xX":
            j = i + 2
            while j < len(body) and j < i + 4 and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 2:j], 16))
            i = j
        elif n == "u":
            out += chr(int(body[i + 2:i + 6], 16)).encode("utf-8", "surrogatepass")
            i += 6
        elif n == "U":
            out += chr(int(body[i + 2:i + 10], 16)).encode("utf-8")
            i += 10
        else:
            raise SystemExit(f"unknown escape \\{n}")
    return bytes(out)


def parse_message(toks, i, end):
    """Fields until `end`: a list of (name, value), value bytes/str scalar or a nested list."""
    fields = []
    while toks[i] != ("p", end):
        kind, name = toks[i]
        if toks[i] == ("p", "["):  # an Any's type URL: [type.googleapis.com/x.Y] { ... }
            j = toks.index(("p", "]"), i)
            name = "[" + "".join(t[1] for t in toks[i + 1:j]) + "]"
            i = j + 1
        else:
            i += 1
        if toks[i] == ("p", ":"):
            i += 1
        if toks[i] in (("p", "{"), ("p", "<")):
            close = "}" if toks[i][1] == "{" else ">"
            value, i = parse_message(toks, i + 1, close)
            i += 1
        elif toks[i] == ("p", "["):  # name: [a, b] is the field repeated
            i += 1
            while toks[i] != ("p", "]"):
                if toks[i] in (("p", "{"), ("p", "<")):
                    close = "}" if toks[i][1] == "{" else ">"
                    value, i = parse_message(toks, i + 1, close)
                    i += 1
                else:
                    value = toks[i][1]
                    i += 1
                fields.append((name, value))
                if toks[i] == ("p", ","):
                    i += 1
            i += 1
            continue
        else:
            value = toks[i][1]
            i += 1
            if isinstance(value, bytes):  # adjacent literals concatenate
                while toks[i][0] == "str":
                    value += toks[i][1]
                    i += 1
        fields.append((name, value))
        if toks[i] in (("p", ","), ("p", ";")):
            i += 1
    return fields, i


def get(fields, name, default=None):
    for k, v in fields:
        if k == name:
            return v
    return default


def all_of(fields, name):
    return [v for k, v in fields if k == name]


class Unsupported(Exception):
    pass


def double(text):
    t = text.lower()
    if t in ("nan", "-nan"):
        return "NaN"
    if t in ("inf", "infinity"):
        return "Infinity"
    if t in ("-inf", "-infinity"):
        return "-Infinity"
    return repr(float(t.rstrip("f")))


def value(fields):
    """cel.expr.Value -> our form."""
    if not fields:
        raise Unsupported("an empty value")
    (kind, v), = fields
    if kind == "int64_value":
        return {"int": str(int(v))}
    if kind == "uint64_value":
        return {"uint": str(int(v))}
    if kind == "double_value":
        return {"double": double(v)}
    if kind == "string_value":
        return {"string": v.decode("utf-8")}
    if kind == "bytes_value":
        return {"bytes": v.hex()}
    if kind == "bool_value":
        return {"bool": v == "true"}
    if kind == "null_value":
        return {"null": True}
    if kind == "list_value":
        return {"list": [value(x) for x in all_of(v, "values")]}
    if kind == "map_value":
        return {"map": [[value(get(e, "key")), value(get(e, "value"))] for e in all_of(v, "entries")]}
    if kind == "type_value":
        return {"type": v.decode("utf-8")}
    if kind == "object_value":
        raise Unsupported("a protocol buffer message value")
    if kind == "enum_value":
        raise Unsupported("a protocol buffer enum value")
    raise Unsupported(kind)


PROTO_NAMES = re.compile(r"TestAllTypes|NestedTestAllTypes|google\.protobuf|cel\.expr\.|\bproto[23]?\.|GlobalEnum|NestedEnum")


def case(file, section, t):
    name = get(t, "name").decode("utf-8")
    expr = get(t, "expr").decode("utf-8")
    out = {"id": f"{file}/{section}/{name}", "expr": expr}
    try:
        if file in SKIPPED_FILES:
            raise Unsupported(SKIPPED_FILES[file])
        if get(t, "check_only") == "true":
            raise Unsupported("check_only: a test of cel-go's type checker, which kiln does not embed")
        if get(t, "disable_macros") == "true":
            raise Unsupported("disable_macros: kiln always parses with its macros")
        if get(t, "container"):
            raise Unsupported("a container (proto package namespace); kro's environment has none")
        if PROTO_NAMES.search(expr):
            raise Unsupported("protocol buffer messages or enums")
        for decl in all_of(t, "type_env"):
            if get(decl, "function") is not None:
                raise Unsupported("declares a function of its own")
        bindings = {}
        for b in all_of(t, "bindings"):
            key = get(b, "key").decode("utf-8")
            if "." in key:
                raise Unsupported("a qualified (dotted) variable name")
            v = get(b, "value")
            if get(v, "value") is None:
                raise Unsupported("a binding that is not a value")
            bindings[key] = value(get(v, "value"))
        if bindings:
            out["bindings"] = bindings
        if get(t, "unknown") is not None or get(t, "any_unknowns") is not None:
            raise Unsupported("unknown values (partial evaluation)")
        if get(t, "eval_error") is not None or get(t, "any_eval_errors") is not None:
            errs = get(t, "eval_error") or get(t, "any_eval_errors")
            msgs = []
            for e in all_of(errs, "errors"):
                msgs.append(get(e, "message", b"").decode("utf-8"))
            out["error"] = "; ".join(m for m in msgs if m) or "an error"
        elif get(t, "typed_result") is not None:
            out["value"] = value(get(get(t, "typed_result"), "result"))
        elif get(t, "value") is not None:
            out["value"] = value(get(t, "value"))
        else:
            out["value"] = {"bool": True}  # the proto's default matcher
    except Unsupported as e:
        out.pop("bindings", None)
        out["skip"] = str(e)
    return out


def main():
    gitdir = sys.argv[1]

    def git(*args):
        return subprocess.run(["git", "--git-dir", gitdir, *args], check=True,
                              capture_output=True).stdout.decode("utf-8")

    commit = git("rev-parse", "HEAD").strip()
    names = [p for p in git("ls-tree", "--name-only", "HEAD", "tests/simple/testdata/").split()
             if p.endswith(".textproto")]
    print(json.dumps({"source": "github.com/google/cel-spec tests/simple/testdata", "commit": commit, "licence": "Apache-2.0 (cel-spec); the cases are test inputs and expected results, rewritten into this form"}))
    for path in sorted(names):
        file = path.rsplit("/", 1)[1][: -len(".textproto")]
        toks = tokens(git("show", f"HEAD:{path}")) + [("p", "EOF")]
        top, _ = parse_message(toks, 0, "EOF")
        for section in all_of(top, "section"):
            sname = get(section, "name").decode("utf-8")
            for t in all_of(section, "test"):
                print(json.dumps(case(file, sname, t), ensure_ascii=False, sort_keys=True))


if __name__ == "__main__":
    main()
