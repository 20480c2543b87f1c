//! libFuzzer entry of the `flux_artifact_paths` target: the path handling of kiln-flux's
//! artifact writer (`kiln_flux::artifact::tar`).
//!
//! The body lives in this file: it belongs to the kiln-flux door, not to kiln-core's targets.
//!
//! Input: paths separated by `\n` (a path may hold any other byte; non-UTF-8 input is skipped);
//! a path ending in `*` is executable. The contract checked, beyond "no panic":
//! - the writer accepts the list exactly when every path passes `check_path`, none repeats and
//!   none is both a file and another's directory;
//! - an accepted archive reads back (ustar headers with valid checksums, PAX `path` records for
//!   long names) as exactly the files given, in sorted order, each preceded by its parent
//!   directories, with Flux's modes and no owner or time.
#![no_main]

use std::collections::BTreeSet;

use kiln_flux::artifact::{check_path, tar, Entry};

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));

fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let entries: Vec<Entry<'_>> = text
        .split('\n')
        .take(64)
        .map(|l| match l.strip_suffix('*') {
            Some(p) => Entry { path: p, bytes: p.as_bytes(), executable: true },
            None => Entry { path: l, bytes: b"x", executable: false },
        })
        .collect();
    let mut names = BTreeSet::new();
    let mut valid = true;
    for e in &entries {
        valid &= check_path(e.path).is_ok() && names.insert(e.path);
    }
    let mut dirs = BTreeSet::new();
    if valid {
        for e in &entries {
            for (i, _) in e.path.match_indices('/') {
                dirs.insert(format!("{}/", &e.path[..i]));
            }
        }
        valid = !dirs.iter().any(|d| names.contains(&d[..d.len() - 1]));
    }
    let result = tar(&entries);
    assert_eq!(result.is_ok(), valid, "accepted {:?} / expected {valid}", result.as_ref().err());
    let Ok(archive) = result else {
        return;
    };
    assert_eq!(archive.len() % 512, 0);
    let mut want: Vec<String> = names.iter().map(|s| s.to_string()).chain(dirs).collect();
    want.sort();
    assert_eq!(read_names(&archive), want);
}

/// The names of an archive's entries, checking each header.
fn read_names(t: &[u8]) -> Vec<String> {
    let num = |f: &[u8]| {
        let s = std::str::from_utf8(f).unwrap().trim_end_matches(['\0', ' ']);
        u64::from_str_radix(s, 8).unwrap()
    };
    let cstr = |f: &[u8]| String::from_utf8(f.iter().copied().take_while(|&b| b != 0).collect()).unwrap();
    let mut out = Vec::new();
    let mut i = 0;
    let mut long: Option<String> = None;
    while i + 512 <= t.len() {
        let h = &t[i..i + 512];
        if h.iter().all(|&b| b == 0) {
            break;
        }
        let mut c = h.to_vec();
        c[148..156].copy_from_slice(b"        ");
        assert_eq!(c.iter().map(|&b| u64::from(b)).sum::<u64>(), num(&h[148..155]), "checksum");
        assert_eq!((num(&h[108..116]), num(&h[116..124]), num(&h[136..148])), (0, 0, 0));
        let size = num(&h[124..136]) as usize;
        let body = &t[i + 512..i + 512 + size];
        i += 512 + size.div_ceil(512) * 512;
        if h[156] == b'x' {
            let rec = std::str::from_utf8(body).unwrap();
            let (len, rest) = rec.split_once(' ').unwrap();
            assert_eq!(len.parse::<usize>().unwrap(), rec.len(), "PAX record length");
            long = Some(rest.strip_prefix("path=").unwrap().strip_suffix('\n').unwrap().to_string());
            continue;
        }
        let prefix = cstr(&h[345..500]);
        let name = cstr(&h[..100]);
        let full = long.take().unwrap_or(if prefix.is_empty() { name } else { format!("{prefix}/{name}") });
        let mode = num(&h[100..108]);
        match h[156] {
            b'5' => assert_eq!(mode, 0o750),
            b'0' => assert!(mode == 0o600 || mode == 0o700),
            k => panic!("entry type {k}"),
        }
        out.push(full);
    }
    out
}
