//! Percent-decoding (RFC 3986 §2.1) of a URI's part: a `file://` URI's path (the language
//! server) or a JSON Pointer in a URI fragment (`$ref`s of an endpoint's schema).

/// `s` with every `%XX` replaced by its byte; `None` for a malformed escape or a result that
/// is not UTF-8.
pub fn decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_decode_and_bad_ones_are_refused() {
        assert_eq!(decode("/a%20b/%C3%A9").as_deref(), Some("/a b/é"));
        assert_eq!(decode("plain").as_deref(), Some("plain"));
        for bad in ["%", "%2", "%zz", "%FF"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
