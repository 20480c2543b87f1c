//! Go `strconv` parsing, so marker values are accepted and rejected exactly as kro accepts them,
//! with Go's error text (`strconv.ParseBool: parsing "yes": invalid syntax`) inside kro's messages.

use super::path::go_quote;

fn syntax(func: &str, s: &str) -> String {
    format!("strconv.{func}: parsing {}: invalid syntax", go_quote(s))
}

fn range(func: &str, s: &str) -> String {
    format!(
        "strconv.{func}: parsing {}: value out of range",
        go_quote(s)
    )
}

/// Go `strconv.ParseBool`: `1 t T TRUE true True` and `0 f F FALSE false False`.
pub(crate) fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(syntax("ParseBool", s)),
    }
}

/// Go `strconv.ParseInt(s, 10, 64)`: optional sign, decimal digits, no underscores.
pub(crate) fn parse_int(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(syntax("ParseInt", s));
    }
    s.parse::<i64>().map_err(|_| range("ParseInt", s))
}

/// Go `strconv.ParseFloat(s, 64)` for decimal input. Non-finite results are rejected here
/// because they cannot be written into a JSON schema (kro would fail later when marshalling).
/// Go also accepts hexadecimal floats (`0x1p-2`); those are rare in schemas and not supported.
pub(crate) fn parse_float(s: &str) -> Result<f64, String> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let decimal_syntax = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && body.bytes().any(|b| b.is_ascii_digit());
    if !decimal_syntax {
        return Err(syntax("ParseFloat", s));
    }
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(f),
        Ok(_) => Err(range("ParseFloat", s)),
        Err(_) => Err(syntax("ParseFloat", s)),
    }
}

/// A float as a JSON number the way Go's `encoding/json` writes it: integral values print
/// without a fraction (`1`, not `1.0`), so store them as integers when that is exact.
pub(crate) fn json_number(f: f64) -> serde_json::Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: beyond it not every integer is a float
    if f.fract() == 0.0 && f.abs() < EXACT {
        serde_json::Value::from(f as i64)
    } else {
        serde_json::Value::from(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bool_accepts_go_spellings_only() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_bool(t), Ok(true), "{t}");
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_bool(f), Ok(false), "{f}");
        }
        assert_eq!(
            parse_bool("yes"),
            Err("strconv.ParseBool: parsing \"yes\": invalid syntax".into())
        );
        let refused = parse_bool("tRuE").expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("strconv.ParseBool: parsing \"tRuE\": invalid syntax"),
            "{refused}"
        );
    }

    #[test]
    fn int_matches_go() {
        assert_eq!(parse_int("42"), Ok(42));
        assert_eq!(parse_int("+7"), Ok(7));
        assert_eq!(parse_int("-7"), Ok(-7));
        assert_eq!(
            parse_int("1.5"),
            Err("strconv.ParseInt: parsing \"1.5\": invalid syntax".into())
        );
        assert_eq!(
            parse_int(""),
            Err("strconv.ParseInt: parsing \"\": invalid syntax".into())
        );
        assert_eq!(
            parse_int("99999999999999999999"),
            Err("strconv.ParseInt: parsing \"99999999999999999999\": value out of range".into())
        );
        let refused = parse_int("1_000").expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("strconv.ParseInt: parsing \"1_000\": invalid syntax"),
            "{refused}"
        );
    }

    #[test]
    fn float_matches_go_for_decimals() {
        assert_eq!(parse_float("0.5"), Ok(0.5));
        assert_eq!(parse_float("-1e3"), Ok(-1000.0));
        assert_eq!(parse_float("10"), Ok(10.0));
        assert_eq!(
            parse_float("abc"),
            Err("strconv.ParseFloat: parsing \"abc\": invalid syntax".into())
        );
        assert!(parse_float("1e999")
            .unwrap_err()
            .ends_with("value out of range"));
        let refused = parse_float("NaN").expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("strconv.ParseFloat: parsing \"NaN\": invalid syntax"),
            "{refused}"
        );
        let refused = parse_float(".").expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("strconv.ParseFloat: parsing \".\": invalid syntax"),
            "{refused}"
        );
    }

    #[test]
    fn json_number_drops_integral_fraction() {
        assert_eq!(json_number(20.0).to_string(), "20");
        assert_eq!(json_number(0.5).to_string(), "0.5");
        assert_eq!(json_number(-3.0).to_string(), "-3");
    }
}
