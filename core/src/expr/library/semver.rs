//! The Kubernetes semver library (`k8s.io/apiserver/pkg/cel/library/semverlib.go`): `semver(s)`,
//! `isSemver(s)`, `major()`, `minor()`, `patch()` and the comparisons, with the parsing and ordering
//! of `github.com/blang/semver/v4`. kro enables the library at version 0, so the normalising
//! `semver(s, true)` forms are absent.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::objects::Opaque;
use cel::{ExecutionError, Value};

use super::Call;

/// The CEL type name of semver values.
pub(super) const TYPE_NAME: &str = "kubernetes.Semver";

/// A semantic version. Build metadata is validated but not kept: nothing reads it, and blang/semver's
/// comparisons (and so equality) ignore it.
#[derive(Debug, Clone)]
pub(super) struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Pre>,
}

/// A pre-release identifier.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pre {
    Num(u64),
    Str(String),
}

impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl Opaque for Semver {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// `semver(string) -> Semver`.
pub(super) fn semver(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    let v = Semver::parse(call.string(s)?).map_err(|e| call.error(e))?;
    Ok(Value::Opaque(Arc::new(v)))
}

/// `isSemver(string) -> bool`.
pub(super) fn is_semver(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    Ok(Value::Bool(Semver::parse(call.string(s)?).is_ok()))
}

/// `<Semver>.major() -> int`.
pub(super) fn major(call: &Call<'_>) -> Result<Value, ExecutionError> {
    // Go converts the uint64 with types.Int(), which wraps; so does `as`.
    Ok(Value::Int(call.this_opaque::<Semver>()?.major as i64))
}

/// `<Semver>.minor() -> int`.
pub(super) fn minor(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Int(call.this_opaque::<Semver>()?.minor as i64))
}

/// `<Semver>.patch() -> int`.
pub(super) fn patch(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Int(call.this_opaque::<Semver>()?.patch as i64))
}

impl Semver {
    /// blang/semver's `Parse`, with its messages.
    pub(super) fn parse(s: &str) -> Result<Semver, String> {
        if s.is_empty() {
            return Err("Version string empty".into());
        }
        let parts: Vec<&str> = s.splitn(3, '.').collect();
        let [major, minor, rest] = parts.as_slice() else {
            return Err("No Major.Minor.Patch elements found".into());
        };
        let major = number(major, "major")?;
        let minor = number(minor, "minor")?;
        let mut patch = *rest;
        if let Some((p, b)) = patch.split_once('+') {
            patch = p;
            for ident in b.split('.') {
                if ident.is_empty() {
                    return Err("Build meta data is empty".into());
                }
                if !ident.chars().all(is_alphanum) {
                    return Err(format!(
                        "Invalid character(s) found in build meta data {ident:?}"
                    ));
                }
            }
        }
        let mut pre = Vec::new();
        let mut pre_str = None;
        if let Some((p, r)) = patch.split_once('-') {
            patch = p;
            pre_str = Some(r);
        }
        let patch = number(patch, "patch")?;
        if let Some(r) = pre_str {
            for ident in r.split('.') {
                pre.push(pre_version(ident)?);
            }
        }
        Ok(Semver {
            major,
            minor,
            patch,
            pre,
        })
    }

    /// blang/semver's `Compare`: numbers, then pre-releases (a version without one is greater).
    pub(super) fn compare(&self, o: &Semver) -> Ordering {
        let core = (self.major, self.minor, self.patch).cmp(&(o.major, o.minor, o.patch));
        if core != Ordering::Equal {
            return core;
        }
        match (self.pre.is_empty(), o.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            (false, false) => {}
        }
        for (a, b) in self.pre.iter().zip(&o.pre) {
            let ord = match (a, b) {
                (Pre::Num(x), Pre::Num(y)) => x.cmp(y),
                (Pre::Str(x), Pre::Str(y)) => x.cmp(y),
                (Pre::Num(_), Pre::Str(_)) => Ordering::Less,
                (Pre::Str(_), Pre::Num(_)) => Ordering::Greater,
            };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        self.pre.len().cmp(&o.pre.len())
    }
}

fn is_alphanum(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '-'
}

/// A version number: digits only, no leading zero.
fn number(s: &str, what: &str) -> Result<u64, String> {
    if !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("Invalid character(s) found in {what} number {s:?}"));
    }
    if s.len() > 1 && s.starts_with('0') {
        let what = capitalize(what);
        return Err(format!(
            "{what} number must not contain leading zeroes {s:?}"
        ));
    }
    s.parse().map_err(|_| parse_uint_error(s))
}

/// strconv.ParseUint's message: digits that do not fit are out of range, an empty string is not a
/// number.
fn parse_uint_error(s: &str) -> String {
    let why = if s.is_empty() {
        "invalid syntax"
    } else {
        "value out of range"
    };
    format!("strconv.ParseUint: parsing {s:?}: {why}")
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

fn pre_version(s: &str) -> Result<Pre, String> {
    if s.is_empty() {
        return Err("Prerelease is empty".into());
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        if s.len() > 1 && s.starts_with('0') {
            return Err(format!(
                "Numeric PreRelease version must not contain leading zeroes {s:?}"
            ));
        }
        return s.parse().map(Pre::Num).map_err(|_| parse_uint_error(s));
    }
    if s.chars().all(is_alphanum) {
        return Ok(Pre::Str(s.to_string()));
    }
    Err(format!("Invalid character(s) found in prerelease {s:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Semver {
        Semver::parse(s).unwrap()
    }

    #[test]
    fn parse_like_blang() {
        assert!(Semver::parse("1.0.0").is_ok());
        assert!(Semver::parse("0.1.0-alpha.1").is_ok());
        assert_eq!(
            v("1.2.3-rc.1+build.5").compare(&v("1.2.3-rc.1")),
            Ordering::Equal
        );
        for (bad, why) in [
            ("", "Version string empty"),
            ("200K", "No Major.Minor.Patch elements found"),
            ("Three", "No Major.Minor.Patch elements found"),
            ("Mi", "No Major.Minor.Patch elements found"),
            (
                "v1.0.0",
                "Invalid character(s) found in major number \"v1\"",
            ),
            ("1.0", "No Major.Minor.Patch elements found"),
            (
                "01.1.1",
                "Major number must not contain leading zeroes \"01\"",
            ),
            (
                "1.2.3-01",
                "Numeric PreRelease version must not contain leading zeroes \"01\"",
            ),
            ("1.2.3+", "Build meta data is empty"),
            ("1.2.3-", "Prerelease is empty"),
        ] {
            let refused = Semver::parse(bad).expect_err("an error");
            assert!(refused.to_string().contains(why), "{bad}: {refused}");
        }
        assert_eq!(
            Semver::parse("01.1.1").unwrap_err(),
            "Major number must not contain leading zeroes \"01\""
        );
        assert_eq!(
            Semver::parse("1..1").unwrap_err(),
            "strconv.ParseUint: parsing \"\": invalid syntax"
        );
        assert_eq!(
            Semver::parse("1.99999999999999999999.1").unwrap_err(),
            "strconv.ParseUint: parsing \"99999999999999999999\": value out of range"
        );
    }

    #[test]
    fn ordering() {
        assert_eq!(v("1.2.3").compare(&v("1.2.3")), Ordering::Equal);
        assert_eq!(v("1.2.3").compare(&v("2.0.0")), Ordering::Less);
        assert_eq!(v("1.2.3").compare(&v("0.1.2")), Ordering::Greater);
        assert_eq!(v("1.0.0-alpha").compare(&v("1.0.0")), Ordering::Less);
        assert_eq!(
            v("1.0.0-alpha").compare(&v("1.0.0-alpha.1")),
            Ordering::Less
        );
        assert_eq!(v("1.0.0-1").compare(&v("1.0.0-alpha")), Ordering::Less);
        assert_eq!(
            v("1.0.0-beta.11").compare(&v("1.0.0-beta.2")),
            Ordering::Greater
        );
        assert_eq!(v("1.0.0+a"), v("1.0.0+b"));
    }
}
