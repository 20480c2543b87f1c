//! kro's deterministic `random.seededString` and `random.seededInt` (`pkg/cel/library/random.go`),
//! both derived from SHA-256 of the seed.

use cel::common::types::Kind;
use cel::{ExecutionError, Value};

use super::hash::sha256_digest;
use super::{string_value, Call};
use crate::expr::budget::admit;
use crate::expr::weight::Weight;

const ALPHANUMERIC: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";

/// The longest string `random.seededString` makes. kro has no limit (a huge length exhausts
/// memory); this is the cap the `cel` crate puts on `lists.range`.
const MAX_LENGTH: i64 = 1_000_000;

/// `random.seededString(int n, string seed) -> string`: character `i` is
/// `ALPHANUMERIC[be_u32(h[4i mod 32 ..][..4]) mod 36]` with `h = sha256(seed)`. kro's re-hash branch
/// is unreachable (`(4i) mod 32 + 4` never exceeds 32), so the string repeats every 8 characters.
pub(super) fn seeded_string(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [n, seed] = call.global::<2>()?;
    let n = call.int(n)?;
    let seed = call.string(seed)?;
    if n <= 0 {
        return Err(call.error("random.seededString length must be positive"));
    }
    if n > MAX_LENGTH {
        return Err(call.error(format!(
            "random.seededString length must be at most {MAX_LENGTH}"
        )));
    }
    admit(
        "random.seededString()",
        Kind::String,
        Weight::bytes(n as usize),
        true,
        true,
    )?;
    let h = sha256_digest(seed.as_bytes());
    let out: String = (0..n as usize)
        .map(|i| {
            let start = (i * 4) % h.len();
            let idx = u32::from_be_bytes([h[start], h[start + 1], h[start + 2], h[start + 3]]);
            ALPHANUMERIC[(idx % 36) as usize] as char
        })
        .collect();
    Ok(string_value(out))
}

/// `random.seededInt(int min, int max, string seed) -> int` in `[min, max)`:
/// `min + be_u64(sha256(seed)[0..8]) mod (max - min)`.
pub(super) fn seeded_int(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [min, max, seed] = call.global::<3>()?;
    let (min, max) = (call.int(min)?, call.int(max)?);
    let seed = call.string(seed)?;
    if min >= max {
        return Err(call.error("random.seededInt min must be less than max"));
    }
    let h = sha256_digest(seed.as_bytes());
    let v = u64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]);
    // Go computes uint64(max - min) with wrapping arithmetic; the difference of two int64s with
    // min < max always fits in a uint64, and the sum wraps back into [min, max).
    let range = max.wrapping_sub(min) as u64;
    Ok(Value::Int(min.wrapping_add((v % range) as i64)))
}
