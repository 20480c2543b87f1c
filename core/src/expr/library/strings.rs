//! cel-go's `indexOf` and `lastIndexOf` of the strings extension with an offset
//! (`github.com/google/cel-go/ext/strings.go` `indexOfOffset`, `lastIndexOfOffset`), where the
//! `cel` crate's differ: an offset at or past the end finds nothing (-1) instead of failing, and
//! the empty string is found at the offset, clamped to the end. A negative offset is an error,
//! as there. Offsets and results count code points.

use cel::common::types::{CelInt, CelString};
use cel::common::value::CowVal;
use cel::{ExecutionError, Value};

use super::to_cow;

fn args<'a>(
    name: &str,
    args: &'a [CowVal<'_, '_>],
) -> Result<(&'a str, &'a str, i64), ExecutionError> {
    let s = |v: &'a CowVal<'_, '_>| v.downcast_ref::<CelString>().map(|s| s.inner());
    match args {
        [this, sub, off] => match (s(this), s(sub), off.downcast_ref::<CelInt>()) {
            (Some(this), Some(sub), Some(off)) => Ok((this, sub, *off.inner())),
            _ => Err(ExecutionError::no_such_member_overload(
                name,
                vec!["string".into(), "string".into(), "int".into()],
            )),
        },
        _ => Err(ExecutionError::invalid_argument_count(3, args.len())),
    }
}

/// `<string>.indexOf(string, int) -> int`.
pub(super) fn index_of_offset<'b, 'v>(
    a: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (this, sub, off) = args("indexOf", &a)?;
    to_cow(Value::Int(search(this, sub, off, false)?))
}

/// `<string>.lastIndexOf(string, int) -> int`.
pub(super) fn last_index_of_offset<'b, 'v>(
    a: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (this, sub, off) = args("lastIndexOf", &a)?;
    to_cow(Value::Int(search(this, sub, off, true)?))
}

fn search(this: &str, sub: &str, off: i64, last: bool) -> Result<i64, ExecutionError> {
    let name = if last { "lastIndexOf" } else { "indexOf" };
    let Ok(off) = usize::try_from(off) else {
        return Err(ExecutionError::function_error(
            name,
            format!("index out of range: {off}"),
        ));
    };
    let runes: Vec<char> = this.chars().collect();
    let subs: Vec<char> = sub.chars().collect();
    if subs.is_empty() {
        return Ok(off.min(runes.len()) as i64);
    }
    if off >= runes.len() || subs.len() > runes.len() {
        return Ok(-1);
    }
    let at = |i: usize| runes[i..i + subs.len()] == subs[..];
    let found = if last {
        (0..=off.min(runes.len() - subs.len()))
            .rev()
            .find(|&i| at(i))
    } else {
        (off..=runes.len() - subs.len()).find(|&i| at(i))
    };
    Ok(found.map_or(-1, |i| i as i64))
}
