//! The Kubernetes quantity library (`k8s.io/apiserver/pkg/cel/library/quantity.go`) over a port of
//! `resource.Quantity` (`k8s.io/apimachinery/pkg/api/resource`).
//!
//! A Go quantity is either an `int64Amount` (`value × 10^scale`) or, when that overflows or needs
//! more than nano precision, an arbitrary-precision `inf.Dec`. Both forms are kept here because
//! they are observable: `isInteger()` is false for any `inf.Dec` and for a negative scale (so
//! `quantity('1000m').isInteger()` is false in Kubernetes), and `asApproximateFloat()` multiplies
//! the stored mantissa by a power of ten. The decimal form holds its digits in a vector; an
//! operation that would need more than [`MAX_DIGITS`] digits fails instead of allocating without
//! bound (Go would go ahead), which only very large exponents (`1e99999`) can reach.

use std::cmp::Ordering;
use std::sync::Arc;

use cel::objects::Opaque;
use cel::{ExecutionError, Value};

use super::{as_opaque, Call};

/// The CEL type name of quantity values.
pub(super) const TYPE_NAME: &str = "kubernetes.Quantity";

/// Most digits a decimal quantity may grow to.
const MAX_DIGITS: usize = 100_000;

const ERR_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";
const ERR_SUFFIX: &str = "unable to parse quantity's suffix";
const ERR_TOO_LARGE: &str = "quantity is too large to compute exactly";

/// A Kubernetes quantity.
#[derive(Debug, Clone)]
pub(super) enum Quantity {
    /// `value × 10^scale`, Go's `int64Amount`.
    Int {
        /// The mantissa.
        value: i64,
        /// The power of ten.
        scale: i32,
    },
    /// Go's `inf.Dec`.
    Dec(Dec),
}

/// `±digits × 10^scale`; `digits` most significant first, without leading zeros (empty for zero,
/// which is never negative).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Dec {
    neg: bool,
    digits: Vec<u8>,
    scale: i64,
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.cmp_value(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl Opaque for Quantity {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// `quantity(string) -> Quantity`.
pub(super) fn quantity(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    let q = Quantity::parse(call.string(s)?).map_err(|e| call.error(e))?;
    Ok(Value::Opaque(Arc::new(q)))
}

/// `isQuantity(string) -> bool`.
pub(super) fn is_quantity(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    Ok(Value::Bool(Quantity::parse(call.string(s)?).is_ok()))
}

/// `<Quantity>.add(Quantity | int) -> Quantity`.
pub(super) fn add(call: &Call<'_>) -> Result<Value, ExecutionError> {
    arith(call, false)
}

/// `<Quantity>.sub(Quantity | int) -> Quantity`.
pub(super) fn sub(call: &Call<'_>) -> Result<Value, ExecutionError> {
    arith(call, true)
}

fn arith(call: &Call<'_>, negate: bool) -> Result<Value, ExecutionError> {
    let (this, [other]) = call.member::<1>()?;
    let q = call.opaque::<Quantity>(this)?;
    let other = match other {
        Value::Int(i) => Quantity::Int {
            value: *i,
            scale: 0,
        },
        v => as_opaque::<Quantity>(v)
            .ok_or_else(|| call.no_overload())?
            .clone(),
    };
    let sum = q
        .add(&other, negate)
        .ok_or_else(|| call.error(ERR_TOO_LARGE))?;
    Ok(Value::Opaque(Arc::new(sum)))
}

/// `<Quantity>.asInteger() -> int`.
pub(super) fn as_integer(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let q = call.this_opaque::<Quantity>()?;
    q.as_i64()
        .map(Value::Int)
        .ok_or_else(|| call.error("cannot convert value to integer"))
}

/// `<Quantity>.isInteger() -> bool`: whether `asInteger()` succeeds.
pub(super) fn is_integer(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(
        call.this_opaque::<Quantity>()?.as_i64().is_some(),
    ))
}

/// `<Quantity>.asApproximateFloat() -> double`.
pub(super) fn as_approximate_float(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Float(call.this_opaque::<Quantity>()?.as_f64()))
}

/// `sign(Quantity) -> int`, Kubernetes' global form, also accepted as `<Quantity>.sign()`.
pub(super) fn sign(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let q = match (&call.this, call.args.as_slice()) {
        (Some(this), []) | (None, [this]) => call.opaque::<Quantity>(this)?,
        _ => return Err(call.no_overload()),
    };
    Ok(Value::Int(q.sign()))
}

impl Quantity {
    /// Go's `resource.ParseQuantity`.
    pub(super) fn parse(s: &str) -> Result<Quantity, &'static str> {
        if s.is_empty() {
            return Err(ERR_FORMAT);
        }
        if s == "0" {
            return Ok(Quantity::Int { value: 0, scale: 0 });
        }
        let parts = scan(s)?;
        let (base, exponent, format) = interpret(parts.suffix).ok_or(ERR_SUFFIX)?;

        let (precision, mut scale, mantissa): (i64, i64, i64) = match format {
            Format::DecimalSi | Format::DecimalExponent => (
                18 - (parts.num.len() + parts.denom.len()) as i64,
                i64::from(exponent),
                1,
            ),
            Format::BinarySi if parts.denom.is_empty() => (
                // Go: 15 - len(num) - int32(float32(exponent)*3/10) - 1; exact for 10..=60.
                14 - parts.num.len() as i64 - i64::from(exponent) * 3 / 10,
                0,
                1i64 << exponent,
            ),
            Format::BinarySi => (-1, 0, 1),
        };
        if precision >= 0 {
            scale -= parts.denom.len() as i64;
            if scale >= -9 {
                let shifted = format!("{}{}", parts.num, parts.denom);
                let value: i64 = shifted.parse().map_err(|_| ERR_NUMERIC)?;
                if let Some(result) = go_mul(value, mantissa) {
                    let value = if parts.positive { result } else { -result };
                    // The scale fits: it is an i32 exponent minus at most 18 digits, and >= -9.
                    let scale = i32::try_from(scale).map_err(|_| ERR_NUMERIC)?;
                    return Ok(Quantity::Int { value, scale });
                }
            }
        }

        // The inf.Dec path: the numeric part exactly, times the suffix, rounded up to nano.
        let mut amount = Dec::scan(parts.value).ok_or(ERR_NUMERIC)?;
        let neg = amount.neg;
        amount.neg = false;
        if base == 10 {
            amount.scale += i64::from(exponent);
        } else {
            amount.digits = mul_small(&amount.digits, 1u64 << exponent);
        }
        if !amount.digits.is_empty() {
            amount = amount.round_up_to_nano().ok_or(ERR_TOO_LARGE)?;
        }
        if format == Format::BinarySi && amount.cmp_value(&Dec::from_i64(i64::MAX, 0)).is_gt() {
            amount = Dec::from_i64(i64::MAX, 0);
        }
        amount.neg = neg && !amount.digits.is_empty();
        Ok(Quantity::Dec(amount))
    }

    fn to_dec(&self) -> Dec {
        match self {
            Quantity::Int { value, scale } => Dec::from_i64(*value, i64::from(*scale)),
            Quantity::Dec(d) => d.clone(),
        }
    }

    /// Go's `Quantity.Cmp`, exactly.
    pub(super) fn cmp_value(&self, other: &Quantity) -> Ordering {
        self.to_dec().cmp_value(&other.to_dec())
    }

    /// Go's `Quantity.Add` (or `Sub` when `negate`): in `int64Amount` form while it fits, else as a
    /// decimal at the finer of the two scales. `None` past [`MAX_DIGITS`].
    fn add(&self, other: &Quantity, negate: bool) -> Option<Quantity> {
        if let (
            Quantity::Int {
                value: a,
                scale: sa,
            },
            Quantity::Int {
                value: b,
                scale: sb,
            },
        ) = (self, other)
        {
            let b = if negate { b.checked_neg() } else { Some(*b) };
            if let Some(sum) = b.and_then(|b| int_add((*a, *sa), (b, *sb))) {
                return Some(Quantity::Int {
                    value: sum.0,
                    scale: sum.1,
                });
            }
        }
        let mut y = other.to_dec();
        if negate && !y.digits.is_empty() {
            y.neg = !y.neg;
        }
        self.to_dec().add(&y).map(Quantity::Dec)
    }

    /// Go's `Quantity.AsInt64`: only an `int64Amount` with a non-negative scale converts.
    fn as_i64(&self) -> Option<i64> {
        match self {
            Quantity::Int { value, scale } => match scale.cmp(&0) {
                Ordering::Equal => Some(*value),
                Ordering::Less => None,
                Ordering::Greater => positive_scale(*value, i64::from(*scale)),
            },
            Quantity::Dec(_) => None,
        }
    }

    /// Go's `Quantity.AsApproximateFloat64`: the mantissa as a double times `math.Pow10(scale)`.
    fn as_f64(&self) -> f64 {
        let (base, exponent) = match self {
            Quantity::Int { value, scale } => (*value as f64, i64::from(*scale)),
            Quantity::Dec(d) => {
                let digits: String = if d.digits.is_empty() {
                    "0".into()
                } else {
                    d.digits.iter().map(|&b| (b + b'0') as char).collect()
                };
                let magnitude: f64 = digits.parse().unwrap_or(f64::INFINITY);
                (if d.neg { -magnitude } else { magnitude }, d.scale)
            }
        };
        if exponent == 0 {
            base
        } else {
            base * go_pow10(exponent)
        }
    }

    fn sign(&self) -> i64 {
        match self {
            Quantity::Int { value, .. } => value.signum(),
            Quantity::Dec(d) if d.digits.is_empty() => 0,
            Quantity::Dec(d) => {
                if d.neg {
                    -1
                } else {
                    1
                }
            }
        }
    }
}

/// Go's `int64Amount.Add`: a zero operand leaves the other (and its scale) as is; otherwise the
/// coarser mantissa is scaled to the finer scale. `None` on overflow.
fn int_add(a: (i64, i32), b: (i64, i32)) -> Option<(i64, i32)> {
    if b.0 == 0 {
        return Some(a);
    }
    if a.0 == 0 {
        return Some(b);
    }
    match a.1.cmp(&b.1) {
        Ordering::Equal => a.0.checked_add(b.0).map(|v| (v, a.1)),
        Ordering::Greater => positive_scale(a.0, i64::from(a.1) - i64::from(b.1))
            .and_then(|v| v.checked_add(b.0))
            .map(|v| (v, b.1)),
        Ordering::Less => positive_scale(b.0, i64::from(b.1) - i64::from(a.1))
            .and_then(|v| a.0.checked_add(v))
            .map(|v| (v, a.1)),
    }
}

/// `base × 10^scale` for `scale >= 0`, `None` on overflow (Go's `positiveScaleInt64`).
fn positive_scale(base: i64, scale: i64) -> Option<i64> {
    let mut v = base;
    for _ in 0..scale {
        v = go_mul(v, 10)?;
    }
    Some(v)
}

/// Go's `int64Multiply`, which also refuses `i64::MIN` as an operand.
fn go_mul(a: i64, b: i64) -> Option<i64> {
    if a == 0 || b == 0 || a == 1 || b == 1 {
        return Some(a.wrapping_mul(b));
    }
    if a == i64::MIN || b == i64::MIN {
        return None;
    }
    a.checked_mul(b)
}

/// Go's `math.Pow10`, whose table-based result the float conversion depends on.
fn go_pow10(n: i64) -> f64 {
    const TAB: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const POS32: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    const NEG32: [f64; 11] = [
        1e0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    if (0..=308).contains(&n) {
        POS32[(n / 32) as usize] * TAB[(n % 32) as usize]
    } else if (-323..0).contains(&n) {
        let m = -n;
        NEG32[(m / 32) as usize] / TAB[(m % 32) as usize]
    } else if n > 0 {
        f64::INFINITY
    } else {
        0.0
    }
}

/// The pieces of a quantity string (Go's `parseQuantityString`).
struct Parts<'a> {
    positive: bool,
    /// Sign and number as written, for the decimal path.
    value: &'a str,
    /// Integer digits without leading zeros ("0" if none).
    num: &'a str,
    /// Fraction digits.
    denom: &'a str,
    suffix: &'a str,
}

fn scan(s: &str) -> Result<Parts<'_>, &'static str> {
    let b = s.as_bytes();
    let end = b.len();
    let mut parts = Parts {
        positive: true,
        value: "",
        num: "",
        denom: "",
        suffix: "",
    };
    let mut pos = 0;
    match b.first() {
        Some(b'-') => {
            parts.positive = false;
            pos += 1;
        }
        Some(b'+') => pos += 1,
        _ => {}
    }
    // Leading zeros; a string of only zeros (or only a sign) is zero.
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= end {
        parts.num = "0";
        parts.value = "0";
        return Ok(parts);
    }
    let num_start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    parts.num = if pos == num_start {
        "0"
    } else {
        &s[num_start..pos]
    };
    if pos >= end {
        parts.value = s;
        return Ok(parts);
    }
    if b[pos] == b'.' {
        pos += 1;
        let denom_start = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        parts.denom = &s[denom_start..pos];
        if pos >= end {
            parts.value = s;
            return Ok(parts);
        }
    }
    parts.value = &s[..pos];
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return Err(ERR_FORMAT);
    }
    parts.suffix = &s[suffix_start..];
    Ok(parts)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// Go's suffix interpretation: (base, exponent, format).
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let dec = match suffix {
        "n" => Some(-9),
        "u" => Some(-6),
        "m" => Some(-3),
        "" => Some(0),
        "k" => Some(3),
        "M" => Some(6),
        "G" => Some(9),
        "T" => Some(12),
        "P" => Some(15),
        "E" => Some(18),
        _ => None,
    };
    if let Some(e) = dec {
        return Some((10, e, Format::DecimalSi));
    }
    let bin = match suffix {
        "Ki" => Some(10),
        "Mi" => Some(20),
        "Gi" => Some(30),
        "Ti" => Some(40),
        "Pi" => Some(50),
        "Ei" => Some(60),
        _ => None,
    };
    if let Some(e) = bin {
        return Some((2, e, Format::BinarySi));
    }
    let rest = suffix.strip_prefix(['e', 'E'])?;
    if rest.is_empty() {
        return None;
    }
    // strconv.ParseInt(rest, 10, 64), then bounded to [-MaxInt32, MaxInt32]: current apimachinery
    // rejects larger exponents (older releases truncated them to an unrelated int32).
    let digits = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let parsed: i64 = rest.parse().ok()?;
    if parsed.unsigned_abs() > i32::MAX as u64 {
        return None;
    }
    Some((10, parsed as i32, Format::DecimalExponent))
}

/// Multiplies decimal digits by a small factor.
fn mul_small(digits: &[u8], factor: u64) -> Vec<u8> {
    if digits.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(digits.len() + 20);
    let mut carry: u128 = 0;
    for &d in digits.iter().rev() {
        let v = u128::from(d) * u128::from(factor) + carry;
        out.push((v % 10) as u8);
        carry = v / 10;
    }
    while carry > 0 {
        out.push((carry % 10) as u8);
        carry /= 10;
    }
    out.reverse();
    out
}

impl Dec {
    fn from_i64(v: i64, scale: i64) -> Dec {
        let digits = if v == 0 {
            Vec::new()
        } else {
            v.unsigned_abs()
                .to_string()
                .bytes()
                .map(|b| b - b'0')
                .collect()
        };
        Dec {
            neg: v < 0,
            digits,
            scale,
        }
    }

    /// inf.Dec's `SetString`: an optional sign, digits with at most one point.
    fn scan(s: &str) -> Option<Dec> {
        let (neg, body) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let mut digits = Vec::with_capacity(body.len());
        let mut point = None;
        for c in body.bytes() {
            match c {
                b'0'..=b'9' => digits.push(c - b'0'),
                b'.' if point.is_none() => point = Some(digits.len()),
                _ => return None,
            }
        }
        if digits.is_empty() {
            return None;
        }
        let scale = -((digits.len() - point.unwrap_or(digits.len())) as i64);
        let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
        digits.drain(..first);
        Some(Dec {
            neg: neg && !digits.is_empty(),
            digits,
            scale,
        })
    }

    /// inf.Dec's `Round(x, 9, RoundUp)` on a non-negative value: exactly nine fraction digits, any
    /// dropped non-zero digit rounding the magnitude up.
    fn round_up_to_nano(mut self) -> Option<Dec> {
        if self.scale < -9 {
            let drop = usize::try_from(-9 - self.scale).ok()?;
            let keep = self.digits.len().saturating_sub(drop);
            let inexact = self.digits[keep..].iter().any(|&d| d != 0);
            self.digits.truncate(keep);
            if inexact {
                self.digits = add_mag(&self.digits, &[1]);
            }
        } else if self.scale > -9 {
            let extra = usize::try_from(self.scale + 9).ok()?;
            if self.digits.len().saturating_add(extra) > MAX_DIGITS {
                return None;
            }
            self.digits.resize(self.digits.len() + extra, 0);
        }
        self.scale = -9;
        let first = self
            .digits
            .iter()
            .position(|&d| d != 0)
            .unwrap_or(self.digits.len());
        self.digits.drain(..first);
        Some(self)
    }

    /// Exact comparison without aligning scales (which could need huge vectors).
    fn cmp_value(&self, other: &Dec) -> Ordering {
        let sign = |d: &Dec| {
            if d.digits.is_empty() {
                0
            } else if d.neg {
                -1
            } else {
                1
            }
        };
        let (sa, sb) = (sign(self), sign(other));
        if sa != sb || sa == 0 {
            return sa.cmp(&sb);
        }
        let mag = cmp_mag(self, other);
        if sa < 0 {
            mag.reverse()
        } else {
            mag
        }
    }

    /// Exact sum at the finer scale (inf.Dec's `Add`); `None` past [`MAX_DIGITS`].
    fn add(&self, other: &Dec) -> Option<Dec> {
        let scale = self.scale.min(other.scale);
        let a = self.aligned(scale)?;
        let b = other.aligned(scale)?;
        let (neg, digits) = if self.neg == other.neg {
            (self.neg, add_mag(&a, &b))
        } else {
            match cmp_aligned(&a, &b) {
                Ordering::Equal => (false, Vec::new()),
                Ordering::Greater => (self.neg, sub_mag(&a, &b)),
                Ordering::Less => (other.neg, sub_mag(&b, &a)),
            }
        };
        let first = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
        let digits = digits[first..].to_vec();
        Some(Dec {
            neg: neg && !digits.is_empty(),
            digits,
            scale,
        })
    }

    /// The digits at a finer `scale`.
    fn aligned(&self, scale: i64) -> Option<Vec<u8>> {
        let extra = usize::try_from(self.scale - scale).ok()?;
        if self.digits.is_empty() {
            return Some(Vec::new());
        }
        if self.digits.len().saturating_add(extra) > MAX_DIGITS {
            return None;
        }
        let mut d = self.digits.clone();
        d.resize(d.len() + extra, 0);
        Some(d)
    }
}

/// Compares magnitudes of two non-zero decimals.
fn cmp_mag(a: &Dec, b: &Dec) -> Ordering {
    // Position of the most significant digit.
    let top_a = a.digits.len() as i64 + a.scale;
    let top_b = b.digits.len() as i64 + b.scale;
    if top_a != top_b {
        return top_a.cmp(&top_b);
    }
    let n = a.digits.len().max(b.digits.len());
    for i in 0..n {
        let x = a.digits.get(i).copied().unwrap_or(0);
        let y = b.digits.get(i).copied().unwrap_or(0);
        if x != y {
            return x.cmp(&y);
        }
    }
    Ordering::Equal
}

/// Compares digit vectors at the same scale (leading zeros allowed).
fn cmp_aligned(a: &[u8], b: &[u8]) -> Ordering {
    let strip = |d: &[u8]| d.iter().position(|&x| x != 0).map_or(0, |i| d.len() - i);
    let (la, lb) = (strip(a), strip(b));
    la.cmp(&lb)
        .then_with(|| a[a.len() - la..].cmp(&b[b.len() - lb..]))
}

fn add_mag(a: &[u8], b: &[u8]) -> Vec<u8> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n + 1);
    let mut carry = 0;
    for i in 0..n {
        let x = if i < a.len() { a[a.len() - 1 - i] } else { 0 };
        let y = if i < b.len() { b[b.len() - 1 - i] } else { 0 };
        let s = x + y + carry;
        out.push(s % 10);
        carry = s / 10;
    }
    if carry > 0 {
        out.push(carry);
    }
    out.reverse();
    out
}

/// `a - b` for `a >= b`.
fn sub_mag(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0i8;
    for i in 0..a.len() {
        let x = a[a.len() - 1 - i] as i8;
        let y = if i < b.len() {
            b[b.len() - 1 - i] as i8
        } else {
            0
        };
        let mut d = x - y - borrow;
        borrow = 0;
        if d < 0 {
            d += 10;
            borrow = 1;
        }
        out.push(d as u8);
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn parse_forms() {
        assert!(matches!(
            q("12Mi"),
            Quantity::Int {
                value: 12582912,
                scale: 0
            }
        ));
        assert!(matches!(
            q("1.5k"),
            Quantity::Int {
                value: 15,
                scale: 2
            }
        ));
        assert!(matches!(
            q("50.703k"),
            Quantity::Int {
                value: 50703,
                scale: 0
            }
        ));
        assert!(matches!(
            q("1000m"),
            Quantity::Int {
                value: 1000,
                scale: -3
            }
        ));
        assert!(matches!(q("-"), Quantity::Int { value: 0, .. }));
        assert!(matches!(q("1.5Gi"), Quantity::Dec(_)));
        assert!(matches!(q("1e-20"), Quantity::Dec(_)));
        assert_eq!(Quantity::parse("10Mo").unwrap_err(), ERR_FORMAT);
        assert_eq!(Quantity::parse("10Mm").unwrap_err(), ERR_SUFFIX);
        assert_eq!(Quantity::parse("").unwrap_err(), ERR_FORMAT);
        assert_eq!(Quantity::parse("Three").unwrap_err(), ERR_FORMAT);
        assert_eq!(Quantity::parse("200K").unwrap_err(), ERR_SUFFIX);
        assert_eq!(Quantity::parse("1,3G").unwrap_err(), ERR_FORMAT);
        assert_eq!(Quantity::parse(".Ei").unwrap_err(), ERR_NUMERIC);
        // Kubernetes documents `quantity('Mi')` as an error, but its parser reads a missing number
        // as 0 (the number part is empty, the suffix is Mi): the code is what kro runs.
        assert_eq!(q("Mi"), q("0"));
        assert_eq!(Quantity::parse("1e4294967297").unwrap_err(), ERR_SUFFIX);
        assert!(Quantity::parse("1E2147483647").is_ok());
        assert_eq!(Quantity::parse("1E-2147483648").unwrap_err(), ERR_SUFFIX);
        for (bad, why) in [
            ("1.1.M", ERR_FORMAT),
            ("1+1.0M", ERR_FORMAT),
            ("0.1mi", ERR_SUFFIX),
            ("0.1am", ERR_FORMAT),
            ("aoeu", ERR_FORMAT),
            (".5i", ERR_SUFFIX),
            ("1i", ERR_SUFFIX),
            ("-3.01i", ERR_SUFFIX),
            ("-3.01e-", ERR_SUFFIX),
            (" 1", ERR_FORMAT),
            ("1 ", ERR_FORMAT),
        ] {
            assert_eq!(Quantity::parse(bad).err(), Some(why), "{bad}");
        }
    }

    #[test]
    fn apimachinery_parse_vectors() {
        let same = [
            ("0Ki", "0"),
            ("1Ki", "1024"),
            ("3Ei", "3458764513820540928"),
            ("100.035k", "100035"),
            ("0.0005k", "0.5"),
            ("0.5e-2", "0.005"),
            ("1.3E+6", "1300000"),
            ("1.01E", "1010000000000000000"),
            ("3.001n", "4n"),
            ("1.1E-9", "2n"),
            ("0.0000000001", "1n"),
            ("0.00000012345", "124n"),
            ("9Ei", "9223372036854775807"),
            ("9223372036854775807Ki", "9223372036854775807"),
            ("100.035Ki", "102435.84"),
            ("0.05Gi", "53687091.2"),
            ("0.000000000001Ki", "2n"),
            (".001", "1m"),
            (".0001k", "100m"),
            ("1.", "1"),
            ("1.G", "1G"),
            (".", "0"),
        ];
        for (a, b) in same {
            assert_eq!(q(a), q(b), "{a} == {b}");
            assert_eq!(q(&format!("-{a}")), q(&format!("-{b}")), "-{a} == -{b}");
            assert_eq!(q(&format!("+{a}")), q(b), "+{a} == {b}");
        }
    }

    #[test]
    fn rounding_and_caps() {
        // Fractions below a nano round up, away from zero.
        assert_eq!(q("1e-20"), q("1n"));
        assert_eq!(q("-1e-20"), q("-1n"));
        assert_eq!(q("1.0000000001"), q("1000000001n"));
        // Binary quantities are capped at the int64 maximum.
        assert_eq!(q("100Ei"), q("9223372036854775807"));
        assert_eq!(q("1.5Gi"), q("1610612736"));
    }

    #[test]
    fn comparisons_are_exact() {
        assert_eq!(q("200M").cmp_value(&q("0.2G")), Ordering::Equal);
        assert_eq!(q("50M").cmp_value(&q("50Mi")), Ordering::Less);
        assert_eq!(
            q("9999999999999999999999999999999999999G").cmp_value(&q("1e45")),
            Ordering::Greater
        );
        assert_eq!(q("1e999999").cmp_value(&q("1e999998")), Ordering::Greater);
        assert_eq!(q("-1").cmp_value(&q("1n")), Ordering::Less);
    }

    #[test]
    fn huge_alignment_fails_instead_of_allocating() {
        assert!(q("1e999999").add(&q("1n"), false).is_none());
        assert_eq!(
            q("1e5").add(&q("1n"), false).unwrap(),
            q("100000000000001n")
        );
    }

    #[test]
    fn pow10_like_go() {
        assert_eq!(go_pow10(-4), 1.0 / 1e4);
        assert_eq!(go_pow10(3), 1e3);
        assert_eq!(go_pow10(400), f64::INFINITY);
        assert_eq!(go_pow10(-400), 0.0);
    }
}
