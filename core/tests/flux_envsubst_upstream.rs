//! Every case of Flux's own envsubst tests, replayed through kiln's engine.
//!
//! Inputs and expected values are those of fluxcd/pkg `envsubst/eval_test.go` (`TestExpand`,
//! `TestExpandStrict`) and `envsubst/funcs_test.go` (revision e2cfd1a2, July 2026): they define
//! the behaviour kiln must reproduce. The functions `funcs_test.go` calls directly (`toSubstr`,
//! `toDefault`, …) are reached here through the expressions that call them.

use std::collections::BTreeMap;

use kiln_core::flux::envsubst::{substitute, ErrorKind, Lookup, Options};

/// Variables, input, expected output.
type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);

fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `TestExpand`'s lookup: every name is set (`return expr.params[s], true`), empty when the
/// table does not give it.
struct EverySet(BTreeMap<String, String>);

impl Lookup for EverySet {
    fn lookup(&self, name: &str) -> Option<&str> {
        Some(self.0.get(name).map_or("", String::as_str))
    }
}

fn expand(pairs: &[(&str, &str)], input: &str) -> Result<String, ErrorKind> {
    let opts = Options {
        strict: false,
        ..Options::default()
    };
    substitute(input, &EverySet(vars(pairs)), &opts).map_err(|e| e.kind)
}

fn strict(pairs: &[(&str, &str)], input: &str) -> Result<String, ErrorKind> {
    substitute(input, &vars(pairs), &Options::default()).map_err(|e| e.kind)
}

/// eval_test.go, `TestExpand`: (variables, input, output).
#[test]
fn eval_test_expand() {
    let v01 = [("var01", "abcdEFGH28ij")];
    let v01_upper = [("var01", "ABCDEFGH28IJ")];
    let path = [("path_name", "/home/bozo/ideas/thoughts.for.today")];
    let z = [("stringZ", "abcABC123ABCabc")];
    let bash = [("filename", "bash.string.txt")];
    let rel = [("filename", "path/to/file")];
    let abs = [("filename", "/path/to/file")];
    let cases: &[Case] = &[
        // text-only
        (&[], "abcdEFGH28ij", "abcdEFGH28ij"),
        // length, case
        (&v01, "${#var01}", "12"),
        (&v01, "${var01^}", "AbcdEFGH28ij"),
        (&v01, "${var01^^}", "ABCDEFGH28IJ"),
        (&v01_upper, "${var01,}", "aBCDEFGH28IJ"),
        (&v01_upper, "${var01,,}", "abcdefgh28ij"),
        // substrings
        (&path, "${path_name:11}", "ideas/thoughts.for.today"),
        (&path, "${path_name:11:5}", "ideas"),
        // defaults
        (&[("var", "abc")], "${var=xyz}", "abc"),
        (&[], "${var=xyz}", "xyz"),
        (
            &[("default_var", "foo")],
            "something ${var=${default_var}}",
            "something foo",
        ),
        (
            &[("default_var", "foo1")],
            "foo: ${var=${default_var}-suffix}",
            "foo: foo1-suffix",
        ),
        (
            &[("default_var", "foo1")],
            "foo: ${var=prefix${default_var}-suffix}",
            "foo: prefixfoo1-suffix",
        ),
        (&[], "${var:=xyz}", "xyz"),
        // replace
        (&z, "${stringZ/%abc/XYZ}", "abcABC123ABCXYZ"),
        (&z, "${stringZ/#abc/XYZ}", "XYZABC123ABCabc"),
        (&z, "${stringZ//abc/xyz}", "xyzABC123ABCxyz"),
        (&z, "${stringZ/abc/xyz}", "xyzABC123ABCabc"),
        // trims: `*` matches `/` in Flux's fork of path.Match
        (&bash, "${filename#*.}", "string.txt"),
        (&rel, "${filename#*/}", "to/file"),
        (&abs, "${filename#*/}", "path/to/file"),
        (&bash, "${filename##*.}", "txt"),
        (&rel, "${filename##*/}", "file"),
        (&abs, "${filename##*/}", "file"),
        (&bash, "${filename%.*}", "bash.string"),
        (&bash, "${filename%%.*}", "bash"),
        // nested
        (&v01, "${var=${var01^^}}", "ABCDEFGH28IJ"),
        // escaped
        (&v01, "$${var01}", "${var01}"),
        (
            &v01,
            "some text ${var01}$${var$${var01}$var01${var01}",
            "some text abcdEFGH28ij${var${var01}$var01abcdEFGH28ij",
        ),
        (
            &[("default_var", "foo")],
            "something $${var=${default_var}}",
            "something ${var=foo}",
        ),
        // escaping in replace arguments
        (&[("stringZ", "foo/bar")], r"${stringZ/\//-}", "foo-bar"),
        (
            &[("stringZ", "foo/bar/baz")],
            r"${stringZ//\//-}",
            "foo-bar-baz",
        ),
        // a backslash outside an expression is text
        (
            &[("default_var", "foo")],
            r"\\something ${var=${default_var}}",
            r"\\something foo",
        ),
        // replaced by nothing
        (&[("stringZ", "foo.bar")], "${stringZ/./}", "foobar"),
    ];
    let mut wrong = Vec::new();
    for (params, input, output) in cases {
        let got = expand(params, input);
        if got.as_deref() != Ok(*output) {
            wrong.push(format!("{input:?}: want {output:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// eval_test.go, `TestExpandStrict`: a variable that is not set fails, whatever the operator,
/// unless the operator is a default.
#[test]
fn eval_test_expand_strict() {
    let ok: &[Case] = &[
        (&[], "abcdEFGH28ij", "abcdEFGH28ij"),
        (&[("foo", "bar")], "${foo}", "bar"),
        (&[("foo", "")], "${foo}", ""),
        (&[("foo", "bar")], "${missing:=default}", "default"),
        (&[], "${missing:-fallback}", "fallback"),
        (&[], "${missing:=assigned}", "assigned"),
        (&[], "${missing=assigned}", "assigned"),
    ];
    let mut wrong = Vec::new();
    for (params, input, output) in ok {
        let got = strict(params, input);
        if got.as_deref() != Ok(*output) {
            wrong.push(format!("{input:?}: want {output:?}, got {got:?}"));
        }
    }
    // Unset, with and without a transformation (fluxcd/flux2#5836).
    for input in [
        "${missing}",
        "${#missing}",
        "${missing^}",
        "${missing^^}",
        "${missing,}",
        "${missing,,}",
        "${missing:0}",
        "${missing:0:10}",
        "${missing/pattern/replacement}",
        "${missing//pattern/replacement}",
        "${missing/#pattern/replacement}",
        "${missing/%pattern/replacement}",
        "${missing#pattern}",
        "${missing##pattern}",
        "${missing%pattern}",
        "${missing%%pattern}",
    ] {
        match strict(&[], input) {
            Err(ErrorKind::Unset(name)) if name == "missing" => {}
            other => wrong.push(format!("{input:?}: want unset, got {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// funcs_test.go: each function through the operator that calls it.
#[test]
fn funcs_test() {
    let hello = [("v", "Hello World")];
    let digits = [("v", "123456789123456789")];
    let cases: &[Case] = &[
        // Test_len, Test_lower, Test_lowerFirst, Test_upper, Test_upperFirst
        (&hello, "${#v}", "11"),
        (&hello, "${v,,}", "hello world"),
        (&[("v", "HELLO WORLD")], "${v,}", "hELLO WORLD"),
        (&[("v", "")], "${v,}", ""),
        (&hello, "${v^^}", "HELLO WORLD"),
        (&[("v", "hello world")], "${v^}", "Hello world"),
        (&[("v", "")], "${v^}", ""),
        // Test_default: the value; the default when empty; several argument nodes joined
        (&hello, "${v:-Hola Mundo}", "Hello World"),
        (&[("v", "")], "${v:-Hola Mundo}", "Hola Mundo"),
        (
            &[
                ("v", ""),
                ("a", "Hola Mundo"),
                ("b", "-Bonjour le monde"),
                ("c", "-Halló heimur"),
            ],
            "${v:-${a}${b}${c}}",
            "Hola Mundo-Bonjour le monde-Halló heimur",
        ),
        // Test_substr
        (&digits, "${v:0:8}", "12345678"),
        (&digits, "${v:1:8}", "23456789"),
        (&digits, "${v:9}", "123456789"),
        (&digits, "${v:9:50}", "123456789"),
        // A negative offset reaches toSubstr through a nested expression: `${v:-3…}` is the
        // default operator, and Atoi does not take `" -3"`.
        (
            &[("v", "123456789123456789"), ("o", "-3")],
            "${v:${o}:2}",
            "78",
        ),
        (
            &[("v", "123456789123456789"), ("o", "-300")],
            "${v:${o}:3}",
            "123",
        ),
        (&[("v", "12345678")], "${v:9:1}", ""),
    ];
    let mut wrong = Vec::new();
    for (params, input, output) in cases {
        let got = strict(params, input);
        if got.as_deref() != Ok(*output) {
            wrong.push(format!("{input:?}: want {output:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
