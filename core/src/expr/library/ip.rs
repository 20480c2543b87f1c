//! The Kubernetes IP library (`k8s.io/apiserver/pkg/cel/library/ip.go`): `ip(s)`, `isIP(s)`,
//! `ip.isCanonical(s)`, `string(ip)` and the predicates on an address, with Go's `net/netip`
//! semantics. Zones and IPv4-mapped IPv6 addresses are refused, as Kubernetes does; leading zeros
//! in IPv4 octets are refused by the parser.

use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;

use cel::objects::Opaque;
use cel::{ExecutionError, Value};

use super::Call;

/// The CEL type name of IP address values.
pub(super) const TYPE_NAME: &str = "net.IP";

/// An IP address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ip(pub IpAddr);

impl Opaque for Ip {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

impl std::fmt::Display for Ip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// `ip(string) -> IP`.
pub(super) fn ip(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    let addr = parse_ip(call.string(s)?).map_err(|e| call.error(e))?;
    Ok(Value::Opaque(Arc::new(Ip(addr))))
}

/// `isIP(string) -> bool`.
pub(super) fn is_ip(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    Ok(Value::Bool(parse_ip(call.string(s)?).is_ok()))
}

/// `ip.isCanonical(string) -> bool`: whether the string is how Go prints the address. An invalid
/// address is an error.
pub(super) fn is_canonical(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    let s = call.string(s)?;
    let addr = parse_ip(s).map_err(|e| call.error(e))?;
    Ok(Value::Bool(addr.to_string() == s))
}

/// `<IP>.family() -> int`: 4 or 6.
pub(super) fn family(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Int(match call.this_opaque::<Ip>()?.0 {
        IpAddr::V4(_) => 4,
        IpAddr::V6(_) => 6,
    }))
}

/// `<IP>.isUnspecified() -> bool`: `0.0.0.0` or `::`.
pub(super) fn is_unspecified(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(call.this_opaque::<Ip>()?.0.is_unspecified()))
}

/// `<IP>.isLoopback() -> bool`: `127.0.0.0/8` or `::1`.
pub(super) fn is_loopback(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(is_loopback_addr(call.this_opaque::<Ip>()?.0)))
}

/// `<IP>.isLinkLocalMulticast() -> bool`: `224.0.0.0/24`, or an IPv6 multicast address of
/// link-local scope (`ff02::/16` and the flagged variants, Go's `ffx2::`).
pub(super) fn is_link_local_multicast(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(match call.this_opaque::<Ip>()?.0 {
        IpAddr::V4(a) => {
            let o = a.octets();
            o[0] == 224 && o[1] == 0 && o[2] == 0
        }
        IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
    }))
}

/// `<IP>.isLinkLocalUnicast() -> bool`: `169.254.0.0/16` or `fe80::/10`.
pub(super) fn is_link_local_unicast(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(Value::Bool(is_link_local_unicast_addr(
        call.this_opaque::<Ip>()?.0,
    )))
}

/// `<IP>.isGlobalUnicast() -> bool`: Go's definition, under which private and ULA addresses count.
pub(super) fn is_global_unicast(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let addr = call.this_opaque::<Ip>()?.0;
    let global = match addr {
        IpAddr::V4(a) => {
            !a.is_unspecified()
                && !a.is_broadcast()
                && !is_loopback_addr(addr)
                && a.octets()[0] & 0xf0 != 0xe0
                && !is_link_local_unicast_addr(addr)
        }
        IpAddr::V6(a) => {
            !a.is_unspecified()
                && !is_loopback_addr(addr)
                && a.octets()[0] != 0xff
                && !is_link_local_unicast_addr(addr)
        }
    };
    Ok(Value::Bool(global))
}

fn is_loopback_addr(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => a.octets()[0] == 127,
        IpAddr::V6(a) => a == Ipv6Addr::LOCALHOST,
    }
}

fn is_link_local_unicast_addr(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(a) => {
            let o = a.octets();
            o[0] == 169 && o[1] == 254
        }
        IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Kubernetes' `parseIPAddr`: `netip.ParseAddr`, then no zone and no IPv4-mapped IPv6 address.
pub(super) fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    let addr = parse_addr(raw).map_err(|msg| {
        format!(
            "IP Address {raw:?} parse error during conversion from string: ParseAddr({raw:?}): {msg}"
        )
    })?;
    match addr {
        (_, Some(_)) => Err(format!("IP address {raw:?} with zone value is not allowed")),
        (IpAddr::V6(a), None) if a.to_ipv4_mapped().is_some() => {
            Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"))
        }
        (a, None) => Ok(a),
    }
}

/// Go's `netip.ParseAddr`: an address and, for IPv6, an optional zone. It accepts exactly what
/// Go accepts and fails with Go's message (the text after `ParseAddr("…"): `), including where
/// the address went wrong (` (at "…")`), so Kubernetes' errors read the same here.
pub(super) fn parse_addr(s: &str) -> Result<(IpAddr, Option<&str>), String> {
    match s.bytes().find(|c| matches!(c, b'.' | b':' | b'%')) {
        Some(b'.') => {
            let mut f = [0u8; 4];
            ipv4_fields(s, &mut f).map(|()| (IpAddr::V4(f.into()), None))
        }
        Some(b':') => parse_ipv6(s),
        Some(_) => Err("missing IPv6 address".into()),
        None => Err("unable to parse IP".into()),
    }
}

/// A netip parse failure: the message, and where in the input it happened.
fn at(msg: &str, rest: &str) -> String {
    format!("{msg} (at {rest:?})")
}

/// Go's `parseIPv4Fields` over all of `s`.
fn ipv4_fields(s: &str, fields: &mut [u8; 4]) -> Result<(), String> {
    let b = s.as_bytes();
    let (mut val, mut pos, mut digits) = (0u32, 0usize, 0usize);
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' => {
                if digits == 1 && val == 0 {
                    return Err("IPv4 field has octet with leading zero".into());
                }
                val = val * 10 + u32::from(c - b'0');
                digits += 1;
                if val > 255 {
                    return Err("IPv4 field has value >255".into());
                }
            }
            b'.' => {
                if i == 0 || i == b.len() - 1 || b[i - 1] == b'.' {
                    return Err(at("IPv4 field must have at least one digit", &s[i..]));
                }
                if pos == 3 {
                    return Err("IPv4 address too long".into());
                }
                fields[pos] = val as u8;
                pos += 1;
                val = 0;
                digits = 0;
            }
            _ => return Err(at("unexpected character", &s[i..])),
        }
    }
    if pos < 3 {
        return Err("IPv4 address too short".into());
    }
    fields[3] = val as u8;
    Ok(())
}

/// Go's `parseIPv6`.
fn parse_ipv6(input: &str) -> Result<(IpAddr, Option<&str>), String> {
    let (mut s, zone) = match input.split_once('%') {
        Some((_, "")) => return Err("zone must be a non-empty string".into()),
        Some((a, z)) => (a, Some(z)),
        None => (input, None),
    };
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.starts_with("::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Ok((IpAddr::V6(Ipv6Addr::UNSPECIFIED), zone));
        }
    }
    let mut i = 0usize;
    while i < 16 {
        let b = s.as_bytes();
        let (mut off, mut acc) = (0usize, 0u32);
        while off < b.len() {
            let d = match b[off] {
                c @ b'0'..=b'9' => c - b'0',
                c @ b'a'..=b'f' => c - b'a' + 10,
                c @ b'A'..=b'F' => c - b'A' + 10,
                _ => break,
            };
            acc = (acc << 4) + u32::from(d);
            if off > 3 {
                return Err(at("each group must have 4 or less digits", s));
            }
            if acc > 0xffff {
                return Err(at("IPv6 field has value >=2^16", s));
            }
            off += 1;
        }
        if off == 0 {
            return Err(at(
                "each colon-separated field must have at least one digit",
                s,
            ));
        }
        if off < b.len() && b[off] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return Err(at(
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    s,
                ));
            }
            if i + 4 > 16 {
                return Err(at(
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    s,
                ));
            }
            let mut f = [0u8; 4];
            ipv4_fields(s, &mut f)?;
            ip[i..i + 4].copy_from_slice(&f);
            s = "";
            i += 4;
            break;
        }
        ip[i] = (acc >> 8) as u8;
        ip[i + 1] = acc as u8;
        i += 2;
        s = &s[off..];
        if s.is_empty() {
            break;
        }
        if !s.starts_with(':') {
            return Err(at("unexpected character, want colon", s));
        } else if s.len() == 1 {
            return Err(at("colon must be followed by more characters", s));
        }
        s = &s[1..];
        if s.starts_with(':') {
            if ellipsis.is_some() {
                return Err(at("multiple :: in address", s));
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return Err(at("trailing garbage after address", s));
    }
    if i < 16 {
        let Some(e) = ellipsis else {
            return Err("address string too short".into());
        };
        let n = 16 - i;
        for j in (e..i).rev() {
            ip[j + n] = ip[j];
        }
        ip[e..e + n].fill(0);
    } else if ellipsis.is_some() {
        return Err(at("the :: must expand to at least one field of zeros", s));
    }
    Ok((IpAddr::V6(Ipv6Addr::from(ip)), zone))
}
