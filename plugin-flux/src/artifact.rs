//! The reproducible artifact: a gzipped tarball with Flux's header rules, its digest and an
//! RFC-0005 revision.
//!
//! source-controller sanitises every archive it serves so that the same files give the same
//! bytes: uid and gid 0, empty user and group names, zero times, directories `0750`, files
//! `0600`, executables `0700`, no symlinks or other special files. This writer does the same,
//! by hand (ustar, with a PAX `path` record for names ustar cannot hold), and adds what a
//! reproducible build needs beyond that: entries in sorted order, and a gzip header with no
//! time and no file name. Same tree, same bytes, whatever the machine or thread count.
//!
//! Large archives are compressed in fixed-size slices, each a complete gzip member, on every
//! core; the members are concatenated in order. A multi-member gzip file is one gzip stream to
//! every reader (RFC 1952 §2.2; Go's `gzip.Reader`, which Flux uses, reads all members by
//! default; so do `gzip -d` and `tar -xz`). The slices are cut at fixed offsets, so the bytes do
//! not depend on the number of threads.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use flate2::{Compression, GzBuilder};
use rayon::prelude::*;
use sha2::{Digest, Sha256};

/// One regular file of an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    /// Its path, relative, `/`-separated.
    pub path: &'a str,
    /// Its contents.
    pub bytes: &'a [u8],
    /// Whether it is executable (mode `0700` instead of `0600`).
    pub executable: bool,
}

/// Uncompressed bytes compressed as one gzip member each (the last slice may be shorter).
pub const SLICE: usize = 4 << 20;

/// The deflate level: the middle of the curve, where the archive is about a third larger than at
/// level 6 and the build's CPU close to level 1's, so `build --artifact` stays near `kiln render`'s
/// time (README, benchmarks). It is part of the reproducibility contract: changing it changes
/// every digest.
pub const LEVEL: u32 = 3;

/// Why a path cannot go into an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadPath {
    /// The path.
    pub path: String,
    /// Why.
    pub why: &'static str,
}

/// Check that `path` is a clean relative path: no leading `/`, no empty, `.` or `..`
/// components, no NUL, no trailing `/`. Archive readers would otherwise place the file
/// somewhere else than the tree said (or outside the extraction directory).
pub fn check_path(path: &str) -> Result<(), BadPath> {
    let bad = |why| {
        Err(BadPath {
            path: path.to_string(),
            why,
        })
    };
    if path.is_empty() {
        return bad("the path is empty");
    }
    if path.contains('\0') {
        return bad("the path contains a NUL character");
    }
    if path.starts_with('/') {
        return bad("the path is absolute");
    }
    if path.contains('\\') {
        return bad("the path contains a backslash");
    }
    for c in path.split('/') {
        match c {
            "" => return bad("the path has an empty component (`//` or a trailing `/`)"),
            "." | ".." => return bad("the path has a `.` or `..` component"),
            _ => {}
        }
    }
    Ok(())
}

/// The tar archive (uncompressed) of `entries`: every parent directory once, then files, all
/// in sorted path order. Paths are checked with [`check_path`]; a path given twice, or a file
/// that is also another file's directory, is refused.
pub fn tar(entries: &[Entry<'_>]) -> Result<Vec<u8>, BadPath> {
    Ok(layout(entries)?.bytes())
}

/// The gzipped tar archive of `entries`: [`gzip`] of [`tar`], without the archive ever being
/// one buffer. Each slice of the archive is put together from its pieces on the worker that
/// compresses it: copying a large archive into one buffer first, and faulting that buffer in,
/// would be serial work of the main thread.
pub fn tar_gz(entries: &[Entry<'_>]) -> Result<Vec<u8>, BadPath> {
    let archive = layout(entries)?;
    // Never empty: an archive ends with two zero blocks.
    let slices = archive.len.div_ceil(SLICE);
    let members: Vec<Vec<u8>> = (0..slices)
        .into_par_iter()
        .map(|i| {
            let start = i * SLICE;
            let end = (start + SLICE).min(archive.len);
            member(&archive.range(start, end))
        })
        .collect();
    Ok(members.concat())
}

/// A tar archive as the pieces it is made of, in order: headers (and padding) made here, file
/// contents borrowed.
struct Layout<'a> {
    pieces: Vec<Piece<'a>>,
    /// Where each piece starts in the archive.
    starts: Vec<usize>,
    len: usize,
}

enum Piece<'a> {
    Made(Vec<u8>),
    Borrowed(&'a [u8]),
}

impl Piece<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Piece::Made(b) => b,
            Piece::Borrowed(b) => b,
        }
    }
}

impl Layout<'_> {
    /// The whole archive.
    fn bytes(&self) -> Vec<u8> {
        self.range(0, self.len)
    }

    /// The archive's bytes from `start` to `end`.
    fn range(&self, start: usize, end: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(end - start);
        // The last piece starting at or before `start`.
        let mut i = self
            .starts
            .partition_point(|&s| s <= start)
            .saturating_sub(1);
        while i < self.pieces.len() && self.starts[i] < end {
            let b = self.pieces[i].bytes();
            let from = start.saturating_sub(self.starts[i]).min(b.len());
            let to = (end - self.starts[i]).min(b.len());
            out.extend_from_slice(&b[from..to]);
            i += 1;
        }
        out
    }
}

/// Lay out the tar archive of `entries` (see [`tar`]).
fn layout<'a>(entries: &[Entry<'a>]) -> Result<Layout<'a>, BadPath> {
    let mut files: Vec<&Entry<'a>> = entries.iter().collect();
    files.sort_by(|a, b| a.path.cmp(b.path));
    let mut dirs = BTreeSet::new();
    for (i, e) in files.iter().enumerate() {
        check_path(e.path)?;
        // Sorted: a path given twice is beside itself.
        if i > 0 && files[i - 1].path == e.path {
            return Err(BadPath {
                path: e.path.to_string(),
                why: "the path is given twice",
            });
        }
        let mut end = 0;
        while let Some(i) = e.path[end..].find('/') {
            end += i;
            dirs.insert(&e.path[..end]);
            end += 1;
        }
    }
    if let Some(d) = dirs
        .iter()
        .find(|d| files.binary_search_by(|e| e.path.cmp(d)).is_ok())
    {
        return Err(BadPath {
            path: d.to_string(),
            why: "the path is both a file and a directory",
        });
    }
    // Directories and files in one sorted sequence, a directory (`a/`) before its contents.
    let mut all: Vec<(String, Option<&Entry<'a>>)> = dirs
        .iter()
        .map(|d| (format!("{d}/"), None))
        .chain(files.iter().map(|e| (e.path.to_string(), Some(*e))))
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    // Each entry's header (with its padding before the next) made on every core.
    let made: Vec<[Piece<'a>; 3]> = all
        .par_iter()
        .map(|(name, entry)| {
            let mut head = Vec::with_capacity(512);
            match entry {
                None => {
                    header(&mut head, name, 0o750, 0, b'5');
                    [
                        Piece::Made(head),
                        Piece::Borrowed(&[]),
                        Piece::Borrowed(&[]),
                    ]
                }
                Some(e) => {
                    let mode = if e.executable { 0o700 } else { 0o600 };
                    header(&mut head, name, mode, e.bytes.len() as u64, b'0');
                    [
                        Piece::Made(head),
                        Piece::Borrowed(e.bytes),
                        Piece::Borrowed(&ZEROS[..padding(e.bytes.len())]),
                    ]
                }
            }
        })
        .collect();
    let mut pieces: Vec<Piece<'a>> = made
        .into_iter()
        .flatten()
        .filter(|p| !p.bytes().is_empty())
        .collect();
    pieces.push(Piece::Borrowed(&ZEROS[..1024]));
    let mut starts = Vec::with_capacity(pieces.len());
    let mut len = 0;
    for p in &pieces {
        starts.push(len);
        len += p.bytes().len();
    }
    Ok(Layout {
        pieces,
        starts,
        len,
    })
}

/// Zeros enough for any padding and the archive's end (two blocks).
static ZEROS: [u8; 1024] = [0; 1024];

fn pad(out: &mut Vec<u8>) {
    out.resize(out.len() + padding(out.len()), 0);
}

/// The zeros that bring `len` bytes to a whole number of 512-byte blocks.
fn padding(len: usize) -> usize {
    (512 - len % 512) % 512
}

/// Write one header (preceded by a PAX header when the name does not fit ustar's fields).
fn header(out: &mut Vec<u8>, name: &str, mode: u32, size: u64, kind: u8) {
    let (prefix, short) = match split_name(name) {
        Some(p) => p,
        None => {
            // A PAX extended header carries the full name; the ustar name is a truncated stand-in
            // that PAX-aware readers ignore.
            // A record is `<length> path=<name>\n`, the length counting its own digits.
            let base = name.len() + " path=\n".len();
            let mut total = base + base.to_string().len();
            if base + total.to_string().len() != total {
                total = base + total.to_string().len();
            }
            let record = format!("{total} path={name}\n");
            raw_header(out, "", "pax_header", 0o600, record.len() as u64, b'x');
            out.extend_from_slice(record.as_bytes());
            pad(out);
            ("", truncate(name, 100))
        }
    };
    raw_header(out, prefix, short, mode, size, kind);
}

/// ustar's split of a name into a prefix (at most 155 bytes) and a name (at most 100), cut at
/// a `/`; `None` when no such cut exists.
fn split_name(name: &str) -> Option<(&str, &str)> {
    if name.len() <= 100 {
        return Some(("", name));
    }
    // The cut is a `/` with at most 155 bytes before it and at most 100 after it; directory
    // names end with `/`, which cannot be the cut.
    let body = name.strip_suffix('/').unwrap_or(name);
    let mut best = None;
    for (i, b) in body.bytes().enumerate() {
        if b == b'/' && i <= 155 && name.len() - i - 1 <= 100 && i > 0 {
            best = Some(i);
            break;
        }
    }
    best.map(|i| (&name[..i], &name[i + 1..]))
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn raw_header(out: &mut Vec<u8>, prefix: &str, name: &str, mode: u32, size: u64, kind: u8) {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    octal(&mut h[100..108], u64::from(mode));
    octal(&mut h[108..116], 0); // uid
    octal(&mut h[116..124], 0); // gid
    octal(&mut h[124..136], size);
    octal(&mut h[136..148], 0); // mtime
    h[156] = kind;
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    // uname, gname: empty; devmajor, devminor: zero.
    octal(&mut h[329..337], 0);
    octal(&mut h[337..345], 0);
    h[345..345 + prefix.len()].copy_from_slice(prefix.as_bytes());
    // The checksum is computed with its own field as spaces.
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    out.extend_from_slice(&h);
}

/// A zero-padded octal number filling the field but its last byte (a NUL).
fn octal(field: &mut [u8], v: u64) {
    let width = field.len() - 1;
    let s = format!("{v:0width$o}");
    field[..width].copy_from_slice(&s.as_bytes()[s.len() - width..]);
    field[width] = 0;
}

/// `data` gzipped with a fixed header (no time, no name, OS "unknown" as Go writes it), in
/// [`SLICE`]-sized members compressed in parallel.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let members: Vec<Vec<u8>> = data.par_chunks(SLICE).map(member).collect();
    if members.is_empty() {
        // An empty input is still one (empty) member.
        let enc = GzBuilder::new()
            .mtime(0)
            .operating_system(255)
            .write(Vec::new(), Compression::new(LEVEL));
        return enc.finish().expect("writing to memory");
    }
    members.concat()
}

/// One slice as one gzip member, with the fixed header.
fn member(chunk: &[u8]) -> Vec<u8> {
    let mut enc = GzBuilder::new().mtime(0).operating_system(255).write(
        Vec::with_capacity(chunk.len() / 4 + 64),
        Compression::new(LEVEL),
    );
    enc.write_all(chunk).expect("writing to memory");
    enc.finish().expect("writing to memory")
}

/// What Flux's `status.artifact` says about an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    /// `sha256:<hex>` of the file.
    pub digest: String,
    /// Its size in bytes.
    pub size: u64,
    /// RFC-0005: `<ref>@sha256:<hex>`.
    pub revision: String,
    /// Where it was written.
    pub path: String,
}

impl Status {
    /// The status of `bytes` written at `path`, with the named pointer `reference` (a tag or
    /// branch; `latest` when none is given).
    pub fn of(bytes: &[u8], path: &str, reference: &str) -> Self {
        let hex: String = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Status {
            digest: format!("sha256:{hex}"),
            size: bytes.len() as u64,
            revision: format!("{reference}@sha256:{hex}"),
            path: path.to_string(),
        }
    }

    /// As JSON shaped like Flux's `status.artifact` (no `lastUpdateTime` or `url`: a file
    /// written by a build step has neither, and a time would make the output irreproducible).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "digest": self.digest,
            "path": self.path,
            "revision": self.revision,
            "size": self.size,
        })
    }
}

/// Write `bytes` to `path` atomically: a temporary file beside it, then renamed over
/// it. A reader sees the old file or the new one, never a part.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".kiln-flux-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    // No fsync: the rename already means no reader ever sees half an artifact, and a CI step's
    // artifact is consumed from the page cache by the next step (`flux push artifact`). On ext4 an
    // fsync also commits every other dirty file of the journal (a just-rendered tree), which cost
    // more than the whole archive. `kiln render -o` does the same.
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn e<'a>(path: &'a str, bytes: &'a [u8]) -> Entry<'a> {
        Entry {
            path,
            bytes,
            executable: false,
        }
    }

    /// A minimal ustar reader for the tests: (name, mode, uid, gid, mtime, kind, contents).
    type Header = (String, u32, u64, u64, u64, u8, Vec<u8>);

    fn read(tar: &[u8]) -> Vec<Header> {
        let num = |f: &[u8]| {
            let s = std::str::from_utf8(f)
                .unwrap()
                .trim_end_matches(['\0', ' ']);
            u64::from_str_radix(s, 8).unwrap()
        };
        let str_of = |f: &[u8]| {
            String::from_utf8(f.iter().copied().take_while(|&b| b != 0).collect()).unwrap()
        };
        let mut out = Vec::new();
        let mut i = 0;
        let mut long = None;
        while i + 512 <= tar.len() {
            let h = &tar[i..i + 512];
            if h.iter().all(|&b| b == 0) {
                break;
            }
            // The checksum covers the header with its field as spaces.
            let mut c = h.to_vec();
            c[148..156].copy_from_slice(b"        ");
            assert_eq!(
                c.iter().map(|&b| u64::from(b)).sum::<u64>(),
                num(&h[148..155])
            );
            let size = num(&h[124..136]) as usize;
            let body = tar[i + 512..i + 512 + size].to_vec();
            i += 512 + size.div_ceil(512) * 512;
            if h[156] == b'x' {
                let rec = String::from_utf8(body).unwrap();
                let (len, _) = rec.split_once(' ').unwrap();
                assert_eq!(len.parse::<usize>().unwrap(), rec.len(), "{rec}");
                long = Some(rec.split_once("path=").unwrap().1.trim_end().to_string());
                continue;
            }
            let prefix = str_of(&h[345..500]);
            let name = str_of(&h[..100]);
            let full = long.take().unwrap_or(if prefix.is_empty() {
                name
            } else {
                format!("{prefix}/{name}")
            });
            assert_eq!(&h[257..263], b"ustar\0");
            assert!(h[265..329].iter().all(|&b| b == 0), "uname and gname empty");
            out.push((
                full,
                num(&h[100..108]) as u32,
                num(&h[108..116]),
                num(&h[116..124]),
                num(&h[136..148]),
                h[156],
                body,
            ));
        }
        out
    }

    #[test]
    fn headers_follow_fluxs_rules_and_entries_are_sorted() {
        let t = tar(&[
            e("b/z.yaml", b"z: 1\n"),
            Entry {
                path: "a/run.sh",
                bytes: b"#!/bin/sh\n",
                executable: true,
            },
            e("b/a.yaml", b"a: 1\n"),
            e("top.yaml", b""),
        ])
        .unwrap();
        assert_eq!(t.len() % 512, 0);
        let got: Vec<_> = read(&t)
            .into_iter()
            .map(|(n, m, u, g, t, k, b)| {
                assert_eq!((u, g, t), (0, 0, 0));
                (n, m, k, b.len())
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("a/".into(), 0o750, b'5', 0),
                ("a/run.sh".into(), 0o700, b'0', 10),
                ("b/".into(), 0o750, b'5', 0),
                ("b/a.yaml".into(), 0o600, b'0', 5),
                ("b/z.yaml".into(), 0o600, b'0', 5),
                ("top.yaml".into(), 0o600, b'0', 0),
            ]
        );
    }

    #[test]
    fn long_names_use_the_prefix_or_a_pax_record() {
        let mid = format!("{}/{}.yaml", "d".repeat(120), "f".repeat(60));
        let long = format!("{}.yaml", "x".repeat(300));
        let deep = format!("{}f.yaml", "a/".repeat(100));
        let t = tar(&[e(&mid, b"1"), e(&long, b"2"), e(&deep, b"3")]).unwrap();
        let names: Vec<String> = read(&t)
            .into_iter()
            .filter(|x| x.5 == b'0')
            .map(|x| x.0)
            .collect();
        let mut want = vec![mid.clone(), long.clone(), deep.clone()];
        want.sort();
        assert_eq!(names, want);
    }

    #[test]
    fn bad_paths_are_refused() {
        for p in [
            "", "/etc/x", "../x", "a/../x", "a//b", "a/", "./a", "a\0b", "a\\b",
        ] {
            let bad = tar(&[e(p, b"")]).unwrap_err();
            assert_eq!(bad.path, p, "{p:?}");
        }
        // Two entries for one path, or a file that is also a directory: the archive would
        // depend on which one an extractor writes last.
        for (a, b, why) in [
            ("a", "a", "the path is given twice"),
            ("a", "a/b", "the path is both a file and a directory"),
        ] {
            let bad = tar(&[e(a, b""), e(b, b"")]).unwrap_err();
            assert!([a, b].contains(&bad.path.as_str()), "{bad:?}");
            assert_eq!(bad.why, why);
        }
    }

    #[test]
    fn gzip_is_reproducible_and_readable_across_members() {
        let data: Vec<u8> = (0..(SLICE * 2 + 1000)).map(|i| (i % 251) as u8).collect();
        let a = gzip(&data);
        let b = gzip(&data);
        assert_eq!(a, b);
        // No time, OS 255.
        assert_eq!(&a[4..8], &[0, 0, 0, 0]);
        assert_eq!(a[9], 255);
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&a[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, data);
        let mut empty = Vec::new();
        flate2::read::MultiGzDecoder::new(&gzip(&[])[..])
            .read_to_end(&mut empty)
            .unwrap();
        assert!(empty.is_empty());
    }

    /// The archive compressed from its pieces is byte for byte the archive compressed whole:
    /// files larger than a slice, files that end exactly on a block, a long name (PAX), slices
    /// cut inside headers and contents alike.
    #[test]
    fn tar_gz_is_gzip_of_tar() {
        let big: Vec<u8> = (0..SLICE + 700).map(|i| (i % 253) as u8).collect();
        let block = vec![b'b'; 512 * 3];
        let long = format!("{}/deep.yaml", "d".repeat(180));
        let small: Vec<Vec<u8>> = (0..6000)
            .map(|i| {
                format!("kind: ConfigMap # {i}\n")
                    .repeat(i % 40 + 1)
                    .into_bytes()
            })
            .collect();
        let mut entries = vec![
            e("big.yaml", &big),
            e("a/block.yaml", &block),
            e(&long, b"long: name\n"),
            e("empty.yaml", b""),
        ];
        let names: Vec<String> = (0..small.len())
            .map(|i| format!("apps/app-{i:04}.yaml"))
            .collect();
        entries.extend(names.iter().zip(&small).map(|(n, b)| e(n, b)));
        let whole = tar(&entries).unwrap();
        assert!(whole.len() > SLICE * 2, "crosses two slice boundaries");
        assert_eq!(tar_gz(&entries).unwrap(), gzip(&whole));
        assert_eq!(tar_gz(&[]).unwrap(), gzip(&tar(&[]).unwrap()));
        // Refusals are the archive's.
        let twice = [e("x.yaml", b""), e("x.yaml", b"")];
        assert_eq!(tar_gz(&twice).unwrap_err(), tar(&twice).unwrap_err());
    }

    #[test]
    fn status_names_digest_size_and_revision() {
        let s = Status::of(b"abc", "out.tar.gz", "v1.0.0");
        assert_eq!(
            s.digest,
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(s.size, 3);
        assert_eq!(s.revision, format!("v1.0.0@{}", s.digest));
    }
}
