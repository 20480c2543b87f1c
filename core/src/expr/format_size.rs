//! What `s.format(list)` will build, estimated before the crate builds it.
//!
//! The format string and its arguments can each be at the size limit, and a clause can write
//! more than its argument weighs (`%x` doubles a string, `%.100f` writes a hundred digits of a
//! single number), so checking only the result (`@kiln_grow`) would let one call allocate many
//! times the limit first. The meter ([`super::meter`]) rewrites each call as
//! `cel.bind(@kiln_fmt, s, @kiln_fmt.format(@kiln_format_args(@kiln_fmt, list)))`; this estimate
//! is what `@kiln_format_args` admits before the call runs.
//!
//! The estimate follows the clauses of cel-go's `ext/formatting_v2.go` (as the crate does): text
//! outside clauses is copied, `%%` writes one byte, and each clause takes the next argument.
//! Strings (`%s`) and hex of strings and bytes (`%x`) are counted exactly, numbers by their digits;
//! a list or map under `%s` counts its weight (its strings' bytes and its entries), a lower bound
//! of what quoting adds, which the check after the call still sees whole.

use cel::common::types::{CelBytes, CelDouble, CelString, Kind};
use cel::common::value::Val;

use super::weight::{self, Caps};

/// Digits the widest 64-bit integer takes, with its sign.
const INT_DIGITS: usize = 20;

/// Bytes `format` writes for `format` with `args`, or the count so far where the call would fail
/// (an argument missing, a clause the crate refuses: the crate reports that failure itself); and
/// whether the count is exact: every clause wrote a string or byte string as it is (`%s`) or in
/// hex (`%x`).
pub(crate) fn estimate(format: &str, args: &[&dyn Val]) -> (usize, bool) {
    let mut exact = true;
    let mut out = 0usize;
    let mut rest = format;
    let mut next = 0;
    while let Some(at) = rest.find('%') {
        out = out.saturating_add(at);
        rest = &rest[at + 1..];
        if let Some(after) = rest.strip_prefix('%') {
            out = out.saturating_add(1);
            rest = after;
            continue;
        }
        let Some(arg) = args.get(next) else {
            return (out, exact);
        };
        let (precision, after) = precision(rest);
        let Some(conversion) = after.chars().next() else {
            return (out, exact);
        };
        let (n, n_exact) = clause(conversion, precision, *arg);
        out = out.saturating_add(n);
        exact &= n_exact;
        rest = &after[conversion.len_utf8()..];
        next += 1;
    }
    (out.saturating_add(rest.len()), exact)
}

/// The precision after a clause's `%` (the crate's default, 6, when there is none; the crate
/// refuses one over 100 before writing anything), and what follows it.
fn precision(clause: &str) -> (usize, &str) {
    let Some(rest) = clause.strip_prefix('.') else {
        return (6, clause);
    };
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let p = rest[..end].parse::<usize>().unwrap_or(0).min(100);
    (p, &rest[end..])
}

/// Bytes one clause writes for `arg`, and whether that is exact.
fn clause(conversion: char, precision: usize, arg: &dyn Val) -> (usize, bool) {
    let kind = arg.get_type().kind();
    let text_len = || match kind {
        Kind::String => arg.downcast_ref::<CelString>().map(|s| s.inner().len()),
        Kind::Bytes => arg.downcast_ref::<CelBytes>().map(|b| b.inner().len()),
        _ => None,
    };
    let text = text_len();
    let n = match (conversion, text) {
        ('s', Some(n)) => n,
        ('s', None) => weight::of_val(arg, Caps::NONE).total().max(INT_DIGITS),
        ('x' | 'X', Some(n)) => n.saturating_mul(2),
        ('f', _) => integer_digits(arg)
            .saturating_add(precision)
            .saturating_add(1),
        ('e', _) => precision.saturating_add(8),
        ('b', _) => 65,
        _ => INT_DIGITS,
    };
    (n, text.is_some() && matches!(conversion, 's' | 'x' | 'X'))
}

/// Digits of the integer part of a number `%f` writes, with its sign.
fn integer_digits(arg: &dyn Val) -> usize {
    match arg.downcast_ref::<CelDouble>().map(|d| *d.inner()) {
        // log10 rounds near powers of ten; one digit more is still an estimate of the right size.
        Some(d) if d.is_finite() && d.abs() >= 1.0 => d.abs().log10() as usize + 3,
        Some(_) => 2,
        None => INT_DIGITS,
    }
}

#[cfg(test)]
mod tests {
    use cel::common::types::{CelBytes, CelDouble, CelInt, CelString};
    use cel::common::value::Val;

    use super::estimate;

    /// The estimate against what the crate's `format` writes, for clauses counted exactly or by
    /// digits.
    #[test]
    fn estimates_what_format_writes() {
        let s = CelString::from("x".repeat(1000));
        let b = CelBytes::from(vec![7u8; 10]);
        let big = CelDouble::from(1.5e300);
        let one = CelDouble::from(1.5);
        let i = CelInt::from(-42);
        let cases: &[(&str, &[&dyn Val], usize)] = &[
            ("plain text", &[], 10),
            ("100%% sure", &[], 9),
            ("<%s>", &[&s], 1002),
            ("%x", &[&s], 2000),
            ("%X", &[&b], 20),
            // `%f` of 1.5e300 writes 301 digits, a dot and 6 decimals.
            ("%f", &[&big], 304 + 6),
            ("%.100f", &[&one], 3 + 100 + 1),
            ("%d and %d", &[&i, &i], 45),
            // An argument missing: the crate fails, and nothing after counts.
            ("%s%s", &[&s], 1000),
        ];
        for (format, args, want) in cases {
            assert_eq!(estimate(format, args).0, *want, "{format}");
        }
    }

    /// Every clause counts at least what its argument writes, so a call near the limit is
    /// refused before it builds: 1.5e300 under `%f` is 308 bytes, and the estimate is not less.
    #[test]
    fn numbers_are_not_undercounted() {
        let big = CelDouble::from(1.5e300);
        let written = format!("{:.6}", 1.5e300_f64).len();
        assert!(estimate("%f", &[&big]).0 >= written, "{written}");
    }
}
