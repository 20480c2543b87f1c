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

/// `netip.ParseAddr`: an address and, for IPv6, an optional zone. The message is Go's where it is
/// generic; the standard library's parser does not say where an address went wrong.
pub(super) fn parse_addr(s: &str) -> Result<(IpAddr, Option<&str>), &'static str> {
    match s.bytes().find(|c| matches!(c, b'.' | b':' | b'%')) {
        Some(b'.') => s
            .parse()
            .map(|a| (IpAddr::V4(a), None))
            .map_err(|_| "unable to parse IP"),
        Some(b':') => {
            let (addr, zone) = match s.split_once('%') {
                Some((_, "")) => return Err("zone must be a non-empty string"),
                Some((a, z)) => (a, Some(z)),
                None => (s, None),
            };
            addr.parse::<Ipv6Addr>()
                .map(|a| (IpAddr::V6(a), zone))
                .map_err(|_| "unable to parse IP")
        }
        Some(_) => Err("missing IPv6 address"),
        None => Err("unable to parse IP"),
    }
}
