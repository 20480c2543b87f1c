//! The Kubernetes CEL libraries kro enables (lists, regex, URLs) and cel-go's lists extension as
//! Kubernetes tests them: the tables "lists", "ext lists version 3", "string lists", "stdlib list
//! functions", "stdlib regex functions" and "URL parsing" of `TestValidationExpressions` in
//! k8s.io/apiextensions-apiserver `pkg/apiserver/schema/cel/validation_test.go` (commit 1aa2717,
//! July 2026), replayed through kiln's evaluator. `k8s.io/apiserver` has no result tables of its
//! own for these three libraries (its `pkg/cel/library` tests for them measure cost only); cidr,
//! ip, quantity and semver are replayed from there as `testdata/render/k8s-cel-*`.
//!
//! Every `valid` rule must evaluate to `true` with `self` bound to the table's object; every rule
//! of `errors` must fail, with Kubernetes' message when Kubernetes reports it while evaluating
//! (`None` marks the ones its type checker rejects: kiln has no cel-go checker, so they fail when
//! evaluated, with kiln's own message).
//!
//! The object is written here as a CEL literal of the values Kubernetes' schema gives it: list
//! items of `format: duration` and `format: date` become durations and timestamps there.

use cel::Value;
use kiln_core::expr::budget::{execute, EvalBudget};
use kiln_core::expr::cel::{compile, root_context, ExprLimits};

struct Table {
    name: &'static str,
    /// `self`, as a CEL expression.
    object: &'static str,
    valid: &'static [&'static str],
    /// The rule, and a fragment of the message Kubernetes reports when it evaluates it.
    errors: &'static [(&'static str, Option<&'static str>)],
    /// Rules of `valid` or `errors` whose answer in kiln differs, and why (docs/cel.md). Each must
    /// still differ: one that starts to agree fails the test, so the list stays true.
    differ: &'static [(&'static str, &'static str)],
}

fn eval(src: &str, this: Option<&Value>) -> Result<Value, String> {
    let c = compile(src, &ExprLimits::default()).map_err(|e| format!("{e:?}"))?;
    let mut ctx = root_context().new_inner_scope();
    if let Some(v) = this {
        ctx.add_variable_from_value("self", v.clone());
    }
    execute(&c.program, &ctx, &EvalBudget::default()).map_err(|e| e.to_string())
}

fn replay(t: &Table) -> Vec<String> {
    let this = eval(t.object, None).unwrap_or_else(|e| panic!("{}: object: {e}", t.name));
    let mut failures = Vec::new();
    let mut verdict = |rule: &str, problem: Option<String>| {
        let differs = t.differ.iter().any(|(r, _)| *r == rule);
        match (problem, differs) {
            (None, false) | (Some(_), true) => {}
            (None, true) => failures.push(format!(
                "{}: {rule}: agrees with Kubernetes now; take it out of `differ` and docs/cel.md",
                t.name
            )),
            (Some(p), false) => failures.push(format!("{}: {rule}: {p}", t.name)),
        }
    };
    for rule in t.valid {
        match eval(rule, Some(&this)) {
            Ok(Value::Bool(true)) => verdict(rule, None),
            other => verdict(rule, Some(format!("expected true, got {other:?}"))),
        }
    }
    for (rule, message) in t.errors {
        match (eval(rule, Some(&this)), message) {
            (Err(e), Some(m)) if !e.contains(m) => {
                verdict(rule, Some(format!("expected {m:?}, got {e:?}")))
            }
            (Err(_), _) => verdict(rule, None),
            (Ok(v), _) => verdict(rule, Some(format!("expected an error, got {v:?}"))),
        }
    }
    for (rule, why) in t.differ {
        assert!(!why.is_empty(), "{rule}: say why it differs");
        assert!(
            t.valid.contains(rule) || t.errors.iter().any(|(r, _)| r == rule),
            "{}: `differ` names {rule}, which is not a rule of the table",
            t.name
        );
    }
    failures
}

const LISTS: Table = Table {
    name: "lists",
    object: "{'val1': [1, 2, 3], 'val2': [1, 2, 3]}",
    valid: &[
        // ValsEqualThemselvesAndDataLiteral("self.val1", "self.val2", "[1, 2, 3]")
        "self.val1 == [1, 2, 3] && [1, 2, 3] == self.val1 && self.val1 == self.val2",
        "1 in self.val1",
        "self.val2[0] in self.val1",
        "!(0 in self.val1)",
        "self.val1 + self.val2 == [1, 2, 3, 1, 2, 3]",
        "self.val1 + [4, 5] == [1, 2, 3, 4, 5]",
    ],
    errors: &[("[1, 'a', false].filter(x, string(x) == 'a')", None)],
    differ: &[(
        "[1, 'a', false].filter(x, string(x) == 'a')",
        "a list literal of mixed types is refused by Kubernetes' HomogeneousAggregateLiterals \
         checker option, which kro does not set; kiln, like kro, evaluates it (to ['a'])",
    )],
};

const EXT_LISTS_V3: Table = Table {
    name: "ext lists version 3",
    object: "{'val1': [1, 2, 3], 'val2': [1, 2, 3]}",
    valid: &[
        "lists.range(4) == [0,1,2,3]",
        "lists.range(0) == []",
        "[5,1,2,3].reverse() == [3,2,1,5]",
        "[].reverse() == []",
        "[1].reverse() == [1]",
        "['are', 'you', 'as', 'bored', 'as', 'I', 'am'].reverse() == ['am', 'I', 'as', 'bored', 'as', 'you', 'are']",
        "[false, true, true].reverse().reverse() == [false, true, true]",
        "[1,2,3,4].slice(0, 4) == [1,2,3,4]",
        "[1,2,3,4].slice(0, 0) == []",
        "[1,2,3,4].slice(1, 1) == []",
        "[1,2,3,4].slice(4, 4) == []",
        "[1,2,3,4].slice(1, 3) == [2, 3]",
        "dyn([]).flatten() == []",
        "dyn([1,2,3,4]).flatten() == [1,2,3,4]",
        "[].sort() == []",
        "[1].sort() == [1]",
        "[4, 3, 2, 1].sort() == [1, 2, 3, 4]",
        r#"["d", "a", "b", "c"].sort() == ["a", "b", "c", "d"]"#,
        "[].sortBy(e, e) == []",
        r#"["a"].sortBy(e, e) == ["a"]"#,
        "[-3, 1, -5, -2, 4].sortBy(e, -(e * e)) == [-5, 4, -3, -2, 1]",
        "[-3, 1, -5, -2, 4].map(e, e * 2).sortBy(e, -(e * e)) == [-10, 8, -6, -4, 2]",
        "lists.range(3).sortBy(e, -e) == [2, 1, 0]",
        r#"["a", "c", "b", "first"].sortBy(e, e == "first" ? "" : e) == ["first", "a", "b", "c"]"#,
        "[{'name': 'foo'}, {'name': 'bar'}, {'name': 'baz'}].sortBy(e, e.name) == [{'name': 'bar'}, {'name': 'baz'}, {'name': 'foo'}]",
        "[].distinct() == []",
        "[1].distinct() == [1]",
        "[-2, 5, -2, 1, 1, 5, -2, 1].distinct() == [-2, 5, 1]",
        "['c', 'a', 'a', 'b', 'a', 'b', 'c', 'c'].distinct() == ['c', 'a', 'b']",
        "[[1], [1], [2]].distinct() == [[1], [2]]",
        "[{'name': 'a'}, {'name': 'b'}, {'name': 'a'}].distinct() == [{'name': 'a'}, {'name': 'b'}]",
        "[[1],[2],[3,4]].flatten() == [1,2,3,4]",
    ],
    errors: &[
        (
            "[1,2,3,4].slice(3, 0) != [1,2]",
            Some("cannot slice(3, 0), start index must be less than or equal to end index"),
        ),
        (
            "[1,2,3,4].slice(0, 10) != [1,2]",
            Some("cannot slice(0, 10), list is length 4"),
        ),
        (
            "[1,2,3,4].slice(-5, 10) != [1,2]",
            Some("cannot slice(-5, 10), negative indexes not supported"),
        ),
        (
            "[1,2,3,4].slice(-5, -3) != [1,2]",
            Some("cannot slice(-5, -3), negative indexes not supported"),
        ),
        (
            "[[1],[2],[3,4]].flatten(-1) == [1,2,3,4]",
            Some("level must be non-negative"),
        ),
        (
            r#"["d", 3, 2, "c"].sort() == ["a", "b", "c", "d"]"#,
            None,
        ),
    ],
    differ: &[],
};

const STRING_LISTS: Table = Table {
    name: "string lists",
    object: "{'val1': ['a', 'b', 'c']}",
    valid: &[
        "self.val1.join('-') == 'a-b-c'",
        "['a', 'b', 'c'].join('-') == 'a-b-c'",
        "self.val1.join() == 'abc'",
        "['a', 'b', 'c'].join() == 'abc'",
    ],
    errors: &[],
    differ: &[],
};

const STDLIB_LISTS: Table = Table {
    name: "stdlib list functions",
    object: "{
        'ints': [1, 2, 2, 3], 'unsortedInts': [2, 1], 'emptyInts': [],
        'doubles': [1.0, 2.0, 2.0, 3.0], 'unsortedDoubles': [2.0, 1.0], 'emptyDoubles': [],
        'intBackedDoubles': [1.0, 2.0, 2.0, 3.0], 'unsortedIntBackedDDoubles': [2.0, 1.0],
        'emptyIntBackedDDoubles': [],
        'durations': [duration('1s'), duration('1m'), duration('1m'), duration('1h')],
        'unsortedDurations': [duration('1m'), duration('1s')], 'emptyDurations': [],
        'strings': ['a', 'b', 'b', 'c'], 'unsortedStrings': ['b', 'a'], 'emptyStrings': [],
        'dates': [timestamp('2000-01-01T00:00:00Z'), timestamp('2000-02-01T00:00:00Z'),
                  timestamp('2000-02-01T00:00:00Z'), timestamp('2010-01-01T00:00:00Z')],
        'unsortedDates': [timestamp('2000-02-01T00:00:00Z'), timestamp('2000-01-01T00:00:00Z')],
        'emptyDates': [],
        'objs': [{'f1': 'a', 'f2': 'a'}, {'f1': 'a', 'f2': 'b'}, {'f1': 'a', 'f2': 'b'},
                 {'f1': 'a', 'f2': 'c'}]
    }",
    valid: &[
        "self.ints.sum() == 8",
        "self.ints.min() == 1",
        "self.ints.max() == 3",
        "self.emptyInts.sum() == 0",
        "self.ints.isSorted()",
        "self.emptyInts.isSorted()",
        "self.unsortedInts.isSorted() == false",
        "self.ints.indexOf(2) == 1",
        "self.ints.lastIndexOf(2) == 2",
        "self.ints.indexOf(10) == -1",
        "self.ints.lastIndexOf(10) == -1",
        "self.doubles.sum() == 8.0",
        "self.doubles.min() == 1.0",
        "self.doubles.max() == 3.0",
        "self.emptyDoubles.sum() == 0.0",
        "self.doubles.isSorted()",
        "self.emptyDoubles.isSorted()",
        "self.unsortedDoubles.isSorted() == false",
        "self.doubles.indexOf(2.0) == 1",
        "self.doubles.lastIndexOf(2.0) == 2",
        "self.doubles.indexOf(10.0) == -1",
        "self.doubles.lastIndexOf(10.0) == -1",
        "self.intBackedDoubles.sum() == 8.0",
        "self.intBackedDoubles.min() == 1.0",
        "self.intBackedDoubles.max() == 3.0",
        "self.emptyIntBackedDDoubles.sum() == 0.0",
        "self.intBackedDoubles.isSorted()",
        "self.emptyDoubles.isSorted()",
        "self.unsortedIntBackedDDoubles.isSorted() == false",
        "self.intBackedDoubles.indexOf(2.0) == 1",
        "self.intBackedDoubles.lastIndexOf(2.0) == 2",
        "self.intBackedDoubles.indexOf(10.0) == -1",
        "self.intBackedDoubles.lastIndexOf(10.0) == -1",
        "self.durations.sum() == duration('1h2m1s')",
        "self.durations.min() == duration('1s')",
        "self.durations.max() == duration('1h')",
        "self.emptyDurations.sum() == duration('0')",
        "self.durations.isSorted()",
        "self.emptyDurations.isSorted()",
        "self.unsortedDurations.isSorted() == false",
        "self.durations.indexOf(duration('1m')) == 1",
        "self.durations.lastIndexOf(duration('1m')) == 2",
        "self.durations.indexOf(duration('2m')) == -1",
        "self.durations.lastIndexOf(duration('2m')) == -1",
        "self.strings.min() == 'a'",
        "self.strings.max() == 'c'",
        "self.strings.isSorted()",
        "self.emptyStrings.isSorted()",
        "self.unsortedStrings.isSorted() == false",
        "self.strings.indexOf('b') == 1",
        "self.strings.lastIndexOf('b') == 2",
        "self.strings.indexOf('x') == -1",
        "self.strings.lastIndexOf('x') == -1",
        "self.dates.min() == timestamp('2000-01-01T00:00:00.000Z')",
        "self.dates.max() == timestamp('2010-01-01T00:00:00.000Z')",
        "self.dates.isSorted()",
        "self.emptyDates.isSorted()",
        "self.unsortedDates.isSorted() == false",
        "self.dates.indexOf(timestamp('2000-02-01T00:00:00.000Z')) == 1",
        "self.dates.lastIndexOf(timestamp('2000-02-01T00:00:00.000Z')) == 2",
        "self.dates.indexOf(timestamp('2005-02-01T00:00:00.000Z')) == -1",
        "self.dates.lastIndexOf(timestamp('2005-02-01T00:00:00.000Z')) == -1",
        "[[1], [2]].indexOf([1]) == 0",
        "[{'a': 1}, {'b': 2}].lastIndexOf({'b': 2}) == 1",
        "self.objs.indexOf(self.objs[1]) == 1",
        "self.objs.lastIndexOf(self.objs[1]) == 2",
        "([0] + self.emptyInts).min() == 0",
        "dyn([]).sum() == 0",
        "dyn([1, 2]).sum() == 3",
        "dyn([1.0, 2.0]).sum() == 3.0",
        "[].sum() == 0",
    ],
    errors: &[
        (
            "self.emptyInts.min() == 1",
            Some("min called on empty list"),
        ),
        (
            "self.emptyInts.max() == 3",
            Some("max called on empty list"),
        ),
        (
            "self.emptyDoubles.min() == 1.0",
            Some("min called on empty list"),
        ),
        (
            "self.emptyDoubles.max() == 3.0",
            Some("max called on empty list"),
        ),
        (
            "self.emptyStrings.min() == 'a'",
            Some("min called on empty list"),
        ),
        (
            "self.emptyStrings.max() == 'c'",
            Some("max called on empty list"),
        ),
        ("['a', 'b'].sum() == 'c'", None),
        ("[[1], [2]].min() == [1]", None),
        ("[{'a': 1}, {'b': 2}].max() == {'b': 2}", None),
    ],
    differ: &[(
        "self.emptyDurations.sum() == duration('0')",
        "the sum of an empty list is the zero of the list's declared element type in cel-go; \
         kiln's values carry no declared type, so an empty list sums to the int 0",
    )],
};

const REGEX: Table = Table {
    name: "stdlib regex functions",
    object: "{'str': 'this is a 123 string 456'}",
    valid: &[
        "self.str.find('[0-9]+') == '123'",
        "self.str.find('[0-9]+') != '456'",
        "self.str.find('xyz') == ''",
        "self.str.findAll('[0-9]+') == ['123', '456']",
        "self.str.findAll('[0-9]+', 0) == []",
        "self.str.findAll('[0-9]+', 1) == ['123']",
        "self.str.findAll('[0-9]+', 2) == ['123', '456']",
        "self.str.findAll('[0-9]+', 3) == ['123', '456']",
        "self.str.findAll('[0-9]+', -1) == ['123', '456']",
        "self.str.findAll('xyz') == []",
        "self.str.findAll('xyz', 1) == []",
    ],
    errors: &[
        // Kubernetes rejects a constant bad pattern when compiling; kiln when evaluating.
        ("self.str.find(')') == ''", None),
        ("self.str.findAll(')') == []", None),
        ("self.str.findAll(')', 1) == []", None),
        ("self.str.matches('x++')", None),
    ],
    differ: &[],
};

const URLS: Table = Table {
    name: "URL parsing",
    object: "{'url': 'https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor'}",
    valid: &[
        "url('/path').getScheme() == ''",
        "url('https://example.com/').getScheme() == 'https'",
        "url('https://example.com:80/').getHost() == 'example.com:80'",
        "url('https://example.com/').getHost() == 'example.com'",
        "url('https://[::1]:80/').getHost() == '[::1]:80'",
        "url('https://[::1]/').getHost() == '[::1]'",
        "url('/path').getHost() == ''",
        "url('https://example.com:80/').getHostname() == 'example.com'",
        "url('https://127.0.0.1/').getHostname() == '127.0.0.1'",
        "url('https://[::1]/').getHostname() == '::1'",
        "url('/path').getHostname() == ''",
        "url('https://example.com:80/').getPort() == '80'",
        "url('https://example.com/').getPort() == ''",
        "url('/path').getPort() == ''",
        "url('https://example.com/path').getEscapedPath() == '/path'",
        "url('https://example.com/with space/').getEscapedPath() == '/with%20space/'",
        "url('https://example.com').getEscapedPath() == ''",
        "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == { 'k1': ['a'], 'k2': ['b', 'c']}",
        "url('https://example.com/path?key with spaces=value with spaces').getQuery() == { 'key with spaces': ['value with spaces']}",
        "url('https://example.com/path?').getQuery() == {}",
        "url('https://example.com/path').getQuery() == {}",
        "url(self.url).getScheme() == 'https'",
        "url(self.url).getHost() == 'kubernetes.io:80'",
        "url(self.url).getHostname() == 'kubernetes.io'",
        "url(self.url).getPort() == '80'",
        "url(self.url).getEscapedPath() == '/docs/home'",
        "url(self.url).getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
        "isURL('https://user:pass@example.com:80/path?query=val#fragment')",
        "isURL('/path') == true",
        "isURL('https://a:b:c/') == false",
        "isURL('../relative-path') == false",
    ],
    errors: &[],
    differ: &[],
};

#[test]
fn kubernetes_validation_rule_tables() {
    let tables = [
        &LISTS,
        &EXT_LISTS_V3,
        &STRING_LISTS,
        &STDLIB_LISTS,
        &REGEX,
        &URLS,
    ];
    let failures: Vec<String> = tables.iter().flat_map(|t| replay(t)).collect();
    let cases: usize = tables.iter().map(|t| t.valid.len() + t.errors.len()).sum();
    assert!(
        failures.is_empty(),
        "{} of {cases} Kubernetes rules differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
