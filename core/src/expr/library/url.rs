//! The Kubernetes URL library (`k8s.io/apiserver/pkg/cel/library/urls.go`): `url(s)`, `isURL(s)` and
//! the getters on a URL.
//!
//! Kubernetes validates with Go's `url.ParseRequestURI` (an absolute URI or an absolute path) and
//! then keeps the result of `url.Parse`; both are reproduced here from Go's `net/url`, so the same
//! strings are accepted and the getters return the same components.

use std::collections::BTreeMap;
use std::net::Ipv6Addr;
use std::sync::Arc;

use cel::objects::Opaque;
use cel::{ExecutionError, Value};

use super::{list_value, map_value, string_value, Call};

/// The CEL type name of URL values.
pub(super) const TYPE_NAME: &str = "kubernetes.URL";

/// A parsed URL, as Go's `url.URL` holds it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Url {
    scheme: String,
    opaque: String,
    user: Option<(Vec<u8>, Option<Vec<u8>>)>,
    /// Decoded host, with the port.
    host: Vec<u8>,
    /// Decoded path.
    path: Vec<u8>,
    /// The path as written, when it is not the default encoding of `path`.
    raw_path: String,
    force_query: bool,
    raw_query: String,
    fragment: Vec<u8>,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        TYPE_NAME
    }
}

/// `url(string) -> URL`.
pub(super) fn url(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    let s = call.string(s)?;
    // ParseRequestURI decides validity; Parse gives the components (ParseRequestURI folds a fragment
    // into the path or the query).
    let parsed = parse(s, true)
        .and_then(|_| parse_with_fragment(s))
        .map_err(|e| {
            call.error(format!(
                "URL parse error during conversion from string: parse {s:?}: {e}"
            ))
        })?;
    Ok(Value::Opaque(Arc::new(parsed)))
}

/// `isURL(string) -> bool`: whether `url(s)` would succeed.
pub(super) fn is_url(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    Ok(Value::Bool(parse(call.string(s)?, true).is_ok()))
}

/// `<URL>.getScheme() -> string`.
pub(super) fn get_scheme(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(string_value(call.this_opaque::<Url>()?.scheme.clone()))
}

/// `<URL>.getHost() -> string`: host and port, IPv6 addresses in brackets.
pub(super) fn get_host(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(string_value(lossy(&call.this_opaque::<Url>()?.host)))
}

/// `<URL>.getHostname() -> string`: the host without port or brackets.
pub(super) fn get_hostname(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let host = lossy(&call.this_opaque::<Url>()?.host);
    Ok(string_value(split_host_port(&host).0))
}

/// `<URL>.getPort() -> string`.
pub(super) fn get_port(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let host = lossy(&call.this_opaque::<Url>()?.host);
    Ok(string_value(split_host_port(&host).1))
}

/// `<URL>.getEscapedPath() -> string`.
pub(super) fn get_escaped_path(call: &Call<'_>) -> Result<Value, ExecutionError> {
    Ok(string_value(call.this_opaque::<Url>()?.escaped_path()))
}

/// `<URL>.getQuery() -> map(string, list(string))`: decoded keys and values, repeated keys
/// collecting their values in order.
pub(super) fn get_query(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let query = parse_query(&call.this_opaque::<Url>()?.raw_query);
    Ok(map_value(query.into_iter().map(|(k, vs)| {
        (k, list_value(vs.into_iter().map(string_value).collect()))
    })))
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl Url {
    /// Go's `URL.EscapedPath`.
    fn escaped_path(&self) -> String {
        if !self.raw_path.is_empty()
            && valid_encoded(&self.raw_path, Mode::Path)
            && unescape(&self.raw_path, Mode::Path).is_ok_and(|p| p == self.path)
        {
            return self.raw_path.clone();
        }
        if self.path == b"*" {
            return "*".into();
        }
        escape(&self.path, Mode::Path)
    }
}

/// Go's `url.Parse`: the fragment split off first.
fn parse_with_fragment(raw: &str) -> Result<Url, String> {
    let (u, frag) = raw.split_once('#').unwrap_or((raw, ""));
    let mut url = parse(u, false)?;
    url.fragment = unescape(frag, Mode::Fragment)?;
    Ok(url)
}

/// Go's `url.parse`; `via_request` is `ParseRequestURI`'s stricter form.
fn parse(raw: &str, via_request: bool) -> Result<Url, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".into());
    }
    if raw.is_empty() && via_request {
        return Err("empty url".into());
    }
    let mut url = Url::default();
    if raw == "*" {
        url.path = b"*".to_vec();
        return Ok(url);
    }
    let (scheme, rest) = split_scheme(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    let mut rest = rest;
    if rest.ends_with('?') && rest.matches('?').count() == 1 {
        url.force_query = true;
        rest = &rest[..rest.len() - 1];
    } else if let Some((r, q)) = rest.split_once('?') {
        rest = r;
        url.raw_query = q.to_string();
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // A rootless path after a scheme is opaque (mailto:x).
            url.opaque = rest.to_string();
            return Ok(url);
        }
        if via_request {
            return Err("invalid URI for request".into());
        }
        let segment = rest.split('/').next().unwrap_or("");
        if segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".into());
        }
    }
    if (!url.scheme.is_empty() || (!via_request && !rest.starts_with("///")))
        && rest.starts_with("//")
    {
        let after = &rest[2..];
        let (authority, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        let (user, host) = parse_authority(authority)?;
        url.user = user;
        url.host = host;
        rest = path;
    }
    url.path = unescape(rest, Mode::Path)?;
    if escape(&url.path, Mode::Path) != rest {
        url.raw_path = rest.to_string();
    }
    Ok(url)
}

/// Go's `getScheme`: a leading `[A-Za-z][A-Za-z0-9+.-]*:`, if any.
fn split_scheme(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
            b':' if i == 0 => return Err("missing protocol scheme".into()),
            b':' => return Ok((&raw[..i], &raw[i + 1..])),
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

type UserInfo = Option<(Vec<u8>, Option<Vec<u8>>)>;

fn parse_authority(authority: &str) -> Result<(UserInfo, Vec<u8>), String> {
    let Some(at) = authority.rfind('@') else {
        return Ok((None, parse_host(authority)?));
    };
    let host = parse_host(&authority[at + 1..])?;
    let userinfo = &authority[..at];
    if !userinfo.chars().all(|c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                '-' | '.'
                    | '_'
                    | ':'
                    | '~'
                    | '!'
                    | '$'
                    | '&'
                    | '\''
                    | '('
                    | ')'
                    | '*'
                    | '+'
                    | ','
                    | ';'
                    | '='
                    | '%'
                    | '@'
            )
    }) {
        return Err("net/url: invalid userinfo".into());
    }
    let user = match userinfo.split_once(':') {
        None => (unescape(userinfo, Mode::UserPassword)?, None),
        Some((u, p)) => (
            unescape(u, Mode::UserPassword)?,
            Some(unescape(p, Mode::UserPassword)?),
        ),
    };
    Ok((Some(user), host))
}

fn parse_host(host: &str) -> Result<Vec<u8>, String> {
    if host.starts_with('[') {
        let Some(i) = host.rfind(']') else {
            return Err("missing ']' in host".into());
        };
        let colon_port = &host[i + 1..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {colon_port:?} after host"));
        }
        // Only an IPv6 address may be bracketed (Go checks this since 1.24.8/1.25.2).
        let (address, zone) = match host[..i].find("%25") {
            Some(z) => (&host[1..z], Some(z)),
            None => (&host[1..i], None),
        };
        let unescaped = unescape(address, Mode::Host)?;
        let literal = String::from_utf8_lossy(&unescaped);
        if literal.parse::<Ipv6Addr>().is_err() {
            return Err(if literal.parse::<std::net::Ipv4Addr>().is_ok() {
                "invalid IP-literal".to_string()
            } else {
                format!("invalid host: ParseAddr({literal:?}): unable to parse IP")
            });
        }
        if let Some(z) = zone {
            let mut out = unescape(&host[..z], Mode::Host)?;
            out.extend(unescape(&host[z..i], Mode::Zone)?);
            out.extend(unescape(&host[i..], Mode::Host)?);
            return Ok(out);
        }
    } else if let Some(i) = host.rfind(':') {
        let colon_port = &host[i..];
        if !valid_optional_port(colon_port) {
            return Err(format!("invalid port {colon_port:?} after host"));
        }
    }
    unescape(host, Mode::Host)
}

fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Go's `splitHostPort` for `Hostname` and `Port`.
fn split_host_port(host_port: &str) -> (String, String) {
    let mut host = host_port;
    let mut port = "";
    if let Some(colon) = host.rfind(':') {
        if valid_optional_port(&host[colon..]) {
            port = &host[colon + 1..];
            host = &host[..colon];
        }
    }
    if host.len() >= 2 && host.starts_with('[') && host.ends_with(']') {
        host = &host[1..host.len() - 1];
    }
    (host.to_string(), port.to_string())
}

/// Go's `parseQuery`, errors ignored as `URL.Query` ignores them: pairs with a `;`, or with a bad
/// escape, are dropped.
fn parse_query(query: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pair in query.split('&') {
        if pair.is_empty() || pair.contains(';') {
            continue;
        }
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (Ok(k), Ok(v)) = (
            unescape(k, Mode::QueryComponent),
            unescape(v, Mode::QueryComponent),
        ) else {
            continue;
        };
        out.entry(lossy(&k)).or_default().push(lossy(&v));
    }
    out
}

/// The URL components Go escapes differently.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Path,
    Host,
    Zone,
    UserPassword,
    QueryComponent,
    Fragment,
}

/// Go's `shouldEscape`.
fn should_escape(c: u8, mode: Mode) -> bool {
    if c.is_ascii_alphanumeric() {
        return false;
    }
    if matches!(mode, Mode::Host | Mode::Zone)
        && matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'<'
                | b'>'
                | b'"'
        )
    {
        return false;
    }
    match c {
        b'-' | b'_' | b'.' | b'~' => return false,
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => return c == b'?',
            Mode::UserPassword => return matches!(c, b'@' | b'/' | b'?' | b':'),
            Mode::QueryComponent => return true,
            Mode::Fragment => return false,
            Mode::Host | Mode::Zone => {}
        },
        _ => {}
    }
    if mode == Mode::Fragment && matches!(c, b'!' | b'(' | b')' | b'*') {
        return false;
    }
    true
}

/// Go's `unescape`: decodes `%XX` (and `+` in query components), rejecting malformed escapes and,
/// in hosts, escaped ASCII and characters a host may not hold.
fn unescape(s: &str, mode: Mode) -> Result<Vec<u8>, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                if i + 2 >= b.len()
                    || !b[i + 1].is_ascii_hexdigit()
                    || !b[i + 2].is_ascii_hexdigit()
                {
                    let end = (i + 3).min(b.len());
                    return Err(format!(
                        "invalid URL escape {:?}",
                        String::from_utf8_lossy(&b[i..end])
                    ));
                }
                let v = (unhex(b[i + 1]) << 4) | unhex(b[i + 2]);
                let escaped = &s[i..i + 3];
                if mode == Mode::Host && unhex(b[i + 1]) < 8 && escaped != "%25" {
                    return Err(format!("invalid URL escape {escaped:?}"));
                }
                if mode == Mode::Zone
                    && escaped != "%25"
                    && v != b' '
                    && should_escape(v, Mode::Host)
                {
                    return Err(format!("invalid URL escape {escaped:?}"));
                }
                out.push(v);
                i += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                i += 1;
            }
            c => {
                if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && should_escape(c, mode) {
                    return Err(format!(
                        "invalid character {:?} in host name",
                        (c as char).to_string()
                    ));
                }
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

fn unhex(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c.wrapping_sub(b'A').wrapping_add(10),
    }
}

/// Go's `escape` (no query-component case is needed here).
fn escape(s: &[u8], mode: Mode) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(s.len());
    for &c in s {
        if should_escape(c, mode) {
            out.push('%');
            out.push(HEX[(c >> 4) as usize] as char);
            out.push(HEX[(c & 15) as usize] as char);
        } else {
            out.push(c as char);
        }
    }
    out
}

/// Go's `validEncoded`.
fn valid_encoded(s: &str, mode: Mode) -> bool {
    s.bytes().all(|c| {
        matches!(
            c,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'@'
                | b'['
                | b']'
                | b'%'
        ) || !should_escape(c, mode)
    })
}
