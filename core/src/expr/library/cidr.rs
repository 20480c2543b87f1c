//! The Kubernetes CIDR library (`k8s.io/apiserver/pkg/cel/library/cidr.go`): `cidr(s)`,
//! `isCIDR(s)`, `string(cidr)` and the members of a CIDR, with Go's `net/netip` semantics.
//!
//! As in Kubernetes, host bits after the prefix are kept (`cidr('192.168.0.1/24')` is valid and
//! `masked()` clears them), and `containsCIDR` is Kubernetes' test: the ranges overlap (Go's
//! `Prefix.Overlaps`) and the receiver's prefix is no longer than the argument's, so
//! `cidr('192.168.0.0/16').containsCIDR(cidr('192.168.10.0/24'))` is true.

use std::net::IpAddr;
use std::sync::Arc;

use cel::objects::Opaque;
use cel::{ExecutionError, Value};

use super::ip::{parse_addr, parse_ip, Ip};
use super::Call;

/// The CEL type name of CIDR values.
pub(super) const TYPE_NAME: &str = "net.CIDR";

/// An address with a prefix length, host bits not cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cidr {
    addr: IpAddr,
    bits: u8,
}

impl Opaque for Cidr {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.bits)
    }
}

/// `cidr(string) -> CIDR`.
pub(super) fn cidr(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    let c = parse_cidr_value(call.string(s)?).map_err(|e| call.error(e))?;
    Ok(Value::Opaque(Arc::new(c)))
}

/// `isCIDR(string) -> bool`.
pub(super) fn is_cidr(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    Ok(Value::Bool(parse_cidr(call.string(s)?).is_ok()))
}

/// `<CIDR>.containsIP(IP | string) -> bool`.
pub(super) fn contains_ip(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let (this, [other]) = call.member::<1>()?;
    let c = call.opaque::<Cidr>(this)?;
    let addr = match other {
        Value::String(s) => parse_ip(s).map_err(|e| call.error(e))?,
        v => call.opaque::<Ip>(v)?.0,
    };
    Ok(Value::Bool(c.contains(addr)))
}

/// `<CIDR>.containsCIDR(CIDR | string) -> bool`.
pub(super) fn contains_cidr(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let (this, [other]) = call.member::<1>()?;
    let c = call.opaque::<Cidr>(this)?;
    let other = match other {
        Value::String(s) => parse_cidr_value(s).map_err(|e| call.error(e))?,
        v => *call.opaque::<Cidr>(v)?,
    };
    // Overlaps under the shorter prefix, which is the receiver's when it is no longer: the
    // argument's address, masked to the receiver's bits, is the receiver's network.
    Ok(Value::Bool(c.bits <= other.bits && c.contains(other.addr)))
}

/// `<CIDR>.ip() -> IP`: the address as written, host bits included.
pub(super) fn ip(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let c = call.this_opaque::<Cidr>()?;
    Ok(Value::Opaque(Arc::new(Ip(c.addr))))
}

/// `<CIDR>.masked() -> CIDR`: host bits cleared.
pub(super) fn masked(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Opaque(Arc::new(
        call.this_opaque::<Cidr>()?.masked(),
    )))
}

/// `<CIDR>.prefixLength() -> int`.
pub(super) fn prefix_length(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Int(i64::from(call.this_opaque::<Cidr>()?.bits)))
}

impl Cidr {
    fn masked(&self) -> Cidr {
        let addr = match self.addr {
            IpAddr::V4(a) => IpAddr::V4((u32::from(a) & mask32(self.bits)).into()),
            IpAddr::V6(a) => IpAddr::V6((u128::from(a) & mask128(self.bits)).into()),
        };
        Cidr {
            addr,
            bits: self.bits,
        }
    }

    /// Go's `Prefix.Contains`: same family, equal under the mask.
    fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip) {
            (IpAddr::V4(p), IpAddr::V4(a)) => {
                (u32::from(p) ^ u32::from(a)) & mask32(self.bits) == 0
            }
            (IpAddr::V6(p), IpAddr::V6(a)) => {
                (u128::from(p) ^ u128::from(a)) & mask128(self.bits) == 0
            }
            _ => false,
        }
    }
}

fn mask32(bits: u8) -> u32 {
    u32::MAX
        .checked_shl(32 - u32::from(bits.min(32)))
        .unwrap_or(0)
}

fn mask128(bits: u8) -> u128 {
    u128::MAX
        .checked_shl(128 - u32::from(bits.min(128)))
        .unwrap_or(0)
}

/// Kubernetes' `parseCIDR` with the message `cidr()` reports.
fn parse_cidr_value(raw: &str) -> Result<Cidr, String> {
    parse_cidr(raw)
        .map_err(|e| format!("network address parse error during conversion from string: {e}"))
}

/// Kubernetes' `parseCIDR`: `netip.ParsePrefix`, then no IPv4-mapped IPv6 address.
fn parse_cidr(raw: &str) -> Result<Cidr, String> {
    let c = parse_prefix(raw).map_err(|msg| {
        format!(
            "network address parse error during conversion from string: netip.ParsePrefix({raw:?}): {msg}"
        )
    })?;
    if let IpAddr::V6(a) = c.addr {
        if a.to_ipv4_mapped().is_some() {
            return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
        }
    }
    Ok(c)
}

/// Go's `netip.ParsePrefix`.
fn parse_prefix(s: &str) -> Result<Cidr, String> {
    let Some(slash) = s.rfind('/') else {
        return Err("no '/'".into());
    };
    let (addr_str, bits_str) = (&s[..slash], &s[slash + 1..]);
    let (addr, zone) =
        parse_addr(addr_str).map_err(|msg| format!("ParseAddr({addr_str:?}): {msg}"))?;
    if zone.is_some() {
        return Err("IPv6 zones cannot be present in a prefix".into());
    }
    // strconv.Atoi would accept a sign or leading zeros; ParsePrefix does not.
    let bad_bits = || format!("bad bits after slash: {bits_str:?}");
    if bits_str.len() > 1 && !matches!(bits_str.as_bytes()[0], b'1'..=b'9') {
        return Err(bad_bits());
    }
    if bits_str.is_empty() || !bits_str.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad_bits());
    }
    let bits: u64 = bits_str.parse().map_err(|_| bad_bits())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if bits > max {
        return Err("prefix length out of range".into());
    }
    Ok(Cidr {
        addr,
        bits: bits as u8,
    })
}
