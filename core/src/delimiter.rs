//! Where a string holds `${`, the delimiter that opens a template expression (kro's, the
//! component types', kurel's): the question every template walk and the schema check of every
//! rendered object ask of every string, most of which hold none. A base-layer helper so that the
//! documents layer (`openapi`) can ask it without importing the CEL stages.

/// Whether `s` holds the opening delimiter `${` anywhere. `str::contains` with a two-byte
/// pattern sets up a substring searcher per call, which costs more than these short strings.
pub fn has_open(s: &str) -> bool {
    find_open(s).is_some()
}

/// Where the first `${` of `s` starts (`s.find("${")`, without the substring searcher).
pub fn find_open(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(at) = b[i..].iter().position(|&c| c == b'$') {
        i += at + 1;
        if b.get(i) == Some(&b'{') {
            return Some(i - 1);
        }
    }
    None
}
