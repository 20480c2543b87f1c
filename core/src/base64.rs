//! Base64 as a Secret's `data` holds it.
//!
//! A Secret's `data` values are base64 of bytes; Flux's `substituteFrom` reads them decoded, and
//! `kiln diff` compares a Secret as the API server stores it (`stringData` merged into `data`),
//! so both need the bytes a value stands for. Encoding is the CEL library's
//! (`expr::library::base64`, standard alphabet with padding, as Go's `encoding/json` writes
//! `[]byte`).

/// Standard base64 (padding optional, whitespace ignored), as the API server accepts it; `None`
/// for anything else (another alphabet, text after the padding, leftover bits).
pub fn decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    let mut pad = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => {
                pad += 1;
                continue;
            }
            b' ' | b'\n' | b'\r' | b'\t' => continue,
            _ => return None,
        };
        if pad > 0 {
            return None;
        }
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover bits must be zero padding of the last character.
    if bits >= 6 || acc != 0 || pad > 2 {
        return None;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_refuses_garbage() {
        assert_eq!(decode("aGVsbG8=").unwrap(), b"hello");
        assert_eq!(decode("aGVsbG8").unwrap(), b"hello");
        assert_eq!(decode("cHJvZA==").unwrap(), b"prod");
        assert_eq!(decode("aGVs\nbG8=").unwrap(), b"hello");
        assert_eq!(decode("").unwrap(), b"");
        assert!(decode("a$b").is_none());
        assert!(decode("aGVsbG8=x").is_none());
        assert!(decode("aGVsbG9").is_none(), "leftover bits");
        assert!(decode("aGVsbG8_").is_none(), "the URL alphabet");
    }
}
