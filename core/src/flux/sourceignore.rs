//! Which files of a source Flux's artifact holds: source-controller's exclusion rules.
//!
//! source-controller archives a source (a Git checkout, an OCI layer) through a filter
//! (fluxcd/pkg `artifact/storage/archive.go`, `SourceIgnoreFilter`) built from every
//! `.sourceignore` file of the tree (fluxcd/pkg `sourceignore/sourceignore.go`,
//! `LoadIgnorePatterns`): the root's, then each directory's below it, depth first in name order,
//! each file's patterns scoped to its directory. The version-control patterns (`.git/`,
//! `.gitignore`, `.gitmodules`, `.gitattributes`) always come first; the other defaults (images,
//! archives, CI configuration, `**/.sops.yaml`, …) only when the tree holds no pattern at all.
//!
//! Patterns are go-git's reading of gitignore (fluxcd/pkg `sourceignore/gitignore/pattern.go`,
//! `matcher.go`), which this module follows rule for rule rather than git's own, where they
//! differ (so neither the `ignore` nor the `globset` crate, which follow git):
//!
//! - each file is judged on its own, by the last pattern that matches it (`!` re-includes); a
//!   directory left out does not hide what is under it, and a pattern that matches a directory
//!   matches everything below it;
//! - a pattern without `/` matches any component of the path below its directory (`foo` leaves out
//!   `a/foo/b`); one with `/` matches from its directory down, component by component, `**`
//!   standing for any number of directories (`**` inside a component, `a**`, matches nothing);
//! - a trailing `/` matches directories (and what is below them), not a file of that name;
//! - components are matched with Go's `filepath.Match` ([`super::glob`]); a malformed pattern
//!   matches nothing; trailing spaces are dropped unless escaped (`\ `); lines starting with `#`
//!   and blank lines are not patterns.
//!
//! A file's lines are read as Go's `bufio.Scanner` reads them: a line of 64 KiB or more ends the
//! file's patterns there (a warning here; silent in Flux).
//!
//! Matching is bounded by a fixed amount of work ([`WORK`]): a tree's patterns are its author's
//! to write, and a million of them against ten thousand files must end in a diagnostic.

use std::cell::Cell;

use super::glob::Pattern as Glob;
use crate::diag::{codes, Diagnostic};

/// The name of the file holding a directory's patterns.
pub const IGNORE_FILE: &str = ".sourceignore";

/// source-controller's patterns for version-control data (`sourceignore.ExcludeVCS`).
const EXCLUDE_VCS: &[&str] = &[".git/", ".gitignore", ".gitmodules", ".gitattributes"];

/// source-controller's other default patterns (`ExcludeExt`, `ExcludeCI`, `ExcludeExtra`),
/// applied when the tree has no pattern of its own.
const EXCLUDE_DEFAULT: &[&str] = &[
    "*.jpg",
    "*.jpeg",
    "*.gif",
    "*.png",
    "*.wmv",
    "*.flv",
    "*.tar.gz",
    "*.zip",
    ".github/",
    ".circleci/",
    ".travis.yml",
    ".gitlab-ci.yml",
    "appveyor.yml",
    ".drone.yml",
    "cloudbuild.yaml",
    "codeship-services.yml",
    "codeship-steps.yml",
    "**/.goreleaser.yml",
    "**/.sops.yaml",
    "**/.flux.yaml",
];

/// The longest line Go's `bufio.Scanner` reads (`MaxScanTokenSize`).
const MAX_LINE: usize = 64 * 1024;

/// The most work matching a tree's files against its patterns may take, in [`Glob::cost`]
/// units: seconds, far beyond any real tree's patterns.
pub const WORK: u64 = 1 << 28;

/// A glob over one path component, as Go's `filepath.Match` reads it. The shapes nearly every
/// real pattern has (`name`, `*.png`, `prefix*`) are compared directly: every file of a tree
/// is matched against every pattern, and the general matcher builds its state sets per call.
#[derive(Debug, Clone)]
enum Name {
    /// No wildcard: the name itself.
    Exact(Vec<u8>),
    /// `*` then no wildcard: any name ending so.
    Suffix(Vec<u8>),
    /// No wildcard then `*`: any name starting so.
    Prefix(Vec<u8>),
    /// Anything else.
    Glob(Glob),
    /// Malformed: matches nothing.
    Malformed,
}

impl Name {
    fn compile(p: &[u8]) -> Name {
        let plain = |s: &[u8]| !s.iter().any(|b| matches!(b, b'*' | b'?' | b'[' | b'\\'));
        match p {
            p if plain(p) => Name::Exact(p.to_vec()),
            [b'*', rest @ ..] if plain(rest) => Name::Suffix(rest.to_vec()),
            [rest @ .., b'*'] if plain(rest) => Name::Prefix(rest.to_vec()),
            p => Glob::compile(p).map_or(Name::Malformed, Name::Glob),
        }
    }
}

/// One component of a pattern with `/`.
#[derive(Debug, Clone)]
enum Part {
    /// Empty (a leading `/`, or `//`).
    Empty,
    /// `**`: any number of directories.
    Any,
    /// `**` inside a component: matches nothing.
    Invalid,
    /// A glob.
    Name(Name),
}

/// Where a pattern was written, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// One of source-controller's default patterns.
    Default(&'static str),
    /// Line `line` of the `.sourceignore` file at `file` (relative to the tree's root).
    File {
        /// The file.
        file: String,
        /// Its line (1-based).
        line: usize,
        /// The line as written (short).
        text: String,
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Default(p) => write!(f, "source-controller's default pattern {p:?}"),
            Origin::File { file, line, text } => write!(f, "{file}:{line} ({text})"),
        }
    }
}

/// One parsed pattern (go-git's `pattern`).
#[derive(Debug, Clone)]
struct Rule {
    /// The directory it applies below, as path components.
    domain: Vec<String>,
    /// Without `/`: the one glob matched against every component.
    name: Option<Name>,
    /// With `/`: its components.
    parts: Vec<Part>,
    inclusion: bool,
    dir_only: bool,
    origin: Origin,
}

impl Rule {
    /// go-git's `ParsePattern`.
    fn parse(p: &[u8], domain: &[String], origin: Origin) -> Rule {
        let mut p = p;
        let inclusion = p.first() == Some(&b'!');
        if inclusion {
            p = &p[1..];
        }
        if !p.ends_with(b"\\ ") {
            while p.last() == Some(&b' ') {
                p = &p[..p.len() - 1];
            }
        }
        let dir_only = p.last() == Some(&b'/');
        if dir_only {
            p = &p[..p.len() - 1];
        }
        let (name, parts) = if p.contains(&b'/') {
            let parts = p
                .split(|&b| b == b'/')
                .map(|c| match c {
                    b"" => Part::Empty,
                    b"**" => Part::Any,
                    c if c.windows(2).any(|w| w == b"**") => Part::Invalid,
                    c => Part::Name(Name::compile(c)),
                })
                .collect();
            (None, parts)
        } else {
            (Some(Name::compile(p)), Vec::new())
        };
        Rule {
            domain: domain.to_vec(),
            name,
            parts,
            inclusion,
            dir_only,
            origin,
        }
    }

    /// go-git's `Match`: `Some(true)` excludes, `Some(false)` includes, `None` says nothing.
    fn judge(&self, path: &[&str], is_dir: bool, work: &Work) -> Result<Option<bool>, Spent> {
        if path.len() <= self.domain.len() || self.domain.iter().zip(path).any(|(d, p)| d != p) {
            return Ok(None);
        }
        let path = &path[self.domain.len()..];
        let matched = match &self.name {
            Some(g) => self.name_match(g, path, is_dir, work)?,
            None => self.glob_match(path, is_dir, work)?,
        };
        Ok(matched.then_some(!self.inclusion))
    }

    /// go-git's `simpleNameMatch`: any component matches.
    fn name_match(
        &self,
        g: &Name,
        path: &[&str],
        is_dir: bool,
        work: &Work,
    ) -> Result<bool, Spent> {
        for (i, name) in path.iter().enumerate() {
            if !work.matches(g, name)? {
                continue;
            }
            return Ok(!(self.dir_only && !is_dir && i + 1 == path.len()));
        }
        Ok(false)
    }

    /// go-git's `globMatch`: components from the domain down; a match of every component may
    /// leave path below it (what is under a matched directory is matched).
    fn glob_match(&self, mut path: &[&str], is_dir: bool, work: &Work) -> Result<bool, Spent> {
        let mut matched = false;
        let mut traverse = false;
        for (i, part) in self.parts.iter().enumerate() {
            let g = match part {
                Part::Empty => {
                    traverse = false;
                    continue;
                }
                Part::Any if i + 1 == self.parts.len() => break,
                Part::Any => {
                    traverse = true;
                    continue;
                }
                Part::Invalid => return Ok(false),
                Part::Name(g) => g,
            };
            if path.is_empty() {
                return Ok(false);
            }
            if traverse {
                traverse = false;
                while let Some((first, rest)) = path.split_first() {
                    path = rest;
                    if work.matches(g, first)? {
                        matched = true;
                        break;
                    } else if path.is_empty() {
                        matched = false;
                    }
                }
            } else {
                if !work.matches(g, path[0])? {
                    return Ok(false);
                }
                matched = true;
                path = &path[1..];
            }
        }
        // A directory pattern matched down to its last component: not a file of that name.
        Ok(matched && !(self.dir_only && !is_dir && path.is_empty()))
    }
}

/// The work matching has left.
#[derive(Debug)]
struct Work(Cell<u64>);

/// Matching ran out of work ([`WORK`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spent;

impl Work {
    /// Whether `g` matches the whole of `name` (Go's `filepath.Match`), charged.
    fn matches(&self, g: &Name, name: &str) -> Result<bool, Spent> {
        let n = name.as_bytes();
        let cost = match g {
            Name::Glob(g) => g.cost(n.len()),
            _ => n.len() as u64 + 1,
        };
        let left = self.0.get().checked_sub(cost).ok_or(Spent)?;
        self.0.set(left);
        Ok(match g {
            Name::Exact(e) => n == e.as_slice(),
            Name::Suffix(s) => n.ends_with(s),
            Name::Prefix(p) => n.starts_with(p),
            Name::Glob(g) => g
                .matching_prefixes(n)
                .is_some_and(|(_, longest)| longest == n.len()),
            Name::Malformed => false,
        })
    }
}

/// The exclusion rules of one tree.
#[derive(Debug)]
pub struct Rules {
    /// Lowest priority first, as go-git's matcher holds them.
    rules: Vec<Rule>,
    work: Work,
}

impl Rules {
    /// The rules of a tree whose `.sourceignore` files are `files`: each file's path relative to
    /// the tree's root (`/`-separated) and its bytes, in any order. Warnings: lines Flux stops
    /// reading at.
    pub fn new(files: &[(String, Vec<u8>)]) -> (Rules, Vec<Diagnostic>) {
        Self::with_work(files, WORK)
    }

    fn with_work(files: &[(String, Vec<u8>)], work: u64) -> (Rules, Vec<Diagnostic>) {
        let mut warnings = Vec::new();
        // LoadIgnorePatterns: a directory's own file, then its subdirectories' in name order.
        let mut sorted: Vec<(Vec<String>, &String, &[u8])> = files
            .iter()
            .map(|(rel, bytes)| {
                let mut domain: Vec<String> = rel.split('/').map(str::to_string).collect();
                domain.pop();
                (domain, rel, bytes.as_slice())
            })
            .collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut own = Vec::new();
        for (domain, rel, bytes) in sorted {
            for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
                if line.len() >= MAX_LINE {
                    warnings.push(
                        Diagnostic::warning(
                            codes::YAML_BUDGET,
                            format!(
                                "line {} is {} bytes or more: Flux's reader stops there, and the patterns after it are not applied",
                                n + 1,
                                MAX_LINE
                            ),
                        )
                        .in_file(rel.clone())
                        .at_line(n + 1, None)
                        .with_hint("split the pattern; no file name is that long"),
                    );
                    break;
                }
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                let text = String::from_utf8_lossy(line);
                if line.starts_with(b"#") || text.trim().is_empty() {
                    continue;
                }
                let origin = Origin::File {
                    file: rel.clone(),
                    line: n + 1,
                    text: crate::diag::quote(&text),
                };
                own.push(Rule::parse(line, &domain, origin));
            }
        }
        let vcs = EXCLUDE_VCS.iter().map(|p| (p, true));
        let defaults = EXCLUDE_DEFAULT.iter().map(|p| (p, own.is_empty()));
        let mut rules: Vec<Rule> = vcs
            .chain(defaults)
            .filter(|(_, on)| *on)
            .map(|(p, _)| Rule::parse(p.as_bytes(), &[], Origin::Default(p)))
            .collect();
        rules.extend(own);
        (
            Rules {
                rules,
                work: Work(Cell::new(work)),
            },
            warnings,
        )
    }

    /// The pattern that leaves `path` (relative to the tree's root, `/`-separated) out of the
    /// artifact, if one does; `Err` when matching has taken all its work.
    pub fn excluding(&self, path: &str, is_dir: bool) -> Result<Option<&Origin>, Spent> {
        let parts: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        for r in self.rules.iter().rev() {
            match r.judge(&parts, is_dir, &self.work)? {
                Some(true) => return Ok(Some(&r.origin)),
                Some(false) => return Ok(None),
                None => {}
            }
        }
        Ok(None)
    }
}

/// KLN1005 for matching that ran out of work.
pub fn spent() -> Diagnostic {
    Diagnostic::error(
        codes::YAML_BUDGET,
        format!(
            "matching the tree's files against its {IGNORE_FILE} patterns took more than {WORK} units of work (a fixed bound)"
        ),
    )
    .with_hint(format!("use fewer {IGNORE_FILE} patterns, or simpler ones"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(files: &[(&str, &str)]) -> Rules {
        let files: Vec<(String, Vec<u8>)> = files
            .iter()
            .map(|(p, t)| (p.to_string(), t.as_bytes().to_vec()))
            .collect();
        let (r, w) = Rules::new(&files);
        assert!(w.is_empty(), "{w:?}");
        r
    }

    fn out(r: &Rules, path: &str, dir: bool) -> bool {
        r.excluding(path, dir).unwrap().is_some()
    }

    /// Every case of go-git's pattern tests as fluxcd/pkg keeps them
    /// (`sourceignore/gitignore/pattern_test.go`: pattern, domain, path, directory, result),
    /// then the matcher's (`matcher_test.go`) and a few of this module's own.
    #[test]
    fn patterns_as_go_git_reads_them() {
        #[allow(clippy::type_complexity)]
        let cases: &[(&str, &[&str], &[&str], bool, Option<bool>)] = &[
            (
                "!vul?ano",
                &[],
                &["value", "vulkano", "tail"],
                false,
                Some(false),
            ), // TestSimpleMatch_inclusion
            (
                "value",
                &["head", "middle", "tail"],
                &["head", "middle"],
                false,
                None,
            ), // TestMatch_domainLonger_mismatch
            (
                "value",
                &["head", "middle", "tail"],
                &["head", "middle", "tail"],
                false,
                None,
            ), // TestMatch_domainSameLength_mismatch
            (
                "value",
                &["head", "middle", "tail"],
                &["head", "middle", "_tail_", "value"],
                false,
                None,
            ), // TestMatch_domainMismatch_mismatch
            (
                "middle/",
                &["value", "volcano"],
                &["value", "volcano", "middle", "tail"],
                false,
                Some(true),
            ), // TestSimpleMatch_withDomain
            (
                "volcano/",
                &["value", "volcano"],
                &["value", "volcano", "tail"],
                true,
                None,
            ), // TestSimpleMatch_onlyMatchInDomain_mismatch
            ("value", &[], &["value", "tail"], false, Some(true)), // TestSimpleMatch_atStart
            ("value", &[], &["head", "value", "tail"], false, Some(true)), // TestSimpleMatch_inTheMiddle
            ("value", &[], &["head", "value"], false, Some(true)),         // TestSimpleMatch_atEnd
            ("value/", &[], &["value", "tail"], false, Some(true)), // TestSimpleMatch_atStart_dirWanted
            ("value/", &[], &["head", "value", "tail"], false, Some(true)), // TestSimpleMatch_inTheMiddle_dirWanted
            ("value/", &[], &["head", "value"], true, Some(true)), // TestSimpleMatch_atEnd_dirWanted
            ("value/", &[], &["head", "value"], false, None), // TestSimpleMatch_atEnd_dirWanted_notADir_mismatch
            ("value", &[], &["head", "val", "tail"], false, None), // TestSimpleMatch_mismatch
            ("val", &[], &["head", "value", "tail"], false, None), // TestSimpleMatch_valueLonger_mismatch
            ("v*o", &[], &["value", "vulkano", "tail"], false, Some(true)), // TestSimpleMatch_withAsterisk
            (
                "vul?ano",
                &[],
                &["value", "vulkano", "tail"],
                false,
                Some(true),
            ), // TestSimpleMatch_withQuestionMark
            (
                "v[ou]l[kc]ano",
                &[],
                &["value", "volcano"],
                false,
                Some(true),
            ), // TestSimpleMatch_magicChars
            ("v[ou]l[", &[], &["value", "vol["], false, None), // TestSimpleMatch_wrongPattern_mismatch
            (
                "/value/vul?ano",
                &[],
                &["value", "vulkano", "tail"],
                false,
                Some(true),
            ), // TestGlobMatch_fromRootWithSlash
            (
                "middle/tail/",
                &["value", "volcano"],
                &["value", "volcano", "middle", "tail"],
                true,
                Some(true),
            ), // TestGlobMatch_withDomain
            (
                "volcano/tail",
                &["value", "volcano"],
                &["value", "volcano", "tail"],
                false,
                None,
            ), // TestGlobMatch_onlyMatchInDomain_mismatch
            (
                "value/vul?ano",
                &[],
                &["value", "vulkano", "tail"],
                false,
                Some(true),
            ), // TestGlobMatch_fromRootWithoutSlash
            ("value/vulkano", &[], &["value", "volcano"], false, None), // TestGlobMatch_fromRoot_mismatch
            ("value/vul?ano", &[], &["value"], false, None), // TestGlobMatch_fromRoot_tooShort_mismatch
            (
                "/value/volcano",
                &[],
                &["value", "value", "volcano"],
                false,
                None,
            ), // TestGlobMatch_fromRoot_notAtRoot_mismatch
            (
                "**/*lue/vol?ano",
                &[],
                &["value", "volcano", "tail"],
                false,
                Some(true),
            ), // TestGlobMatch_leadingAsterisks_atStart
            (
                "**/*lue/vol?ano",
                &[],
                &["head", "value", "volcano", "tail"],
                false,
                Some(true),
            ), // TestGlobMatch_leadingAsterisks_notAtStart
            (
                "**/*lue/vol?ano",
                &[],
                &["head", "value", "Volcano", "tail"],
                false,
                None,
            ), // TestGlobMatch_leadingAsterisks_mismatch
            (
                "**/*lue/vol?ano/",
                &[],
                &["head", "value", "volcano", "tail"],
                false,
                Some(true),
            ), // TestGlobMatch_leadingAsterisks_isDir
            (
                "**/*lue/vol?ano/",
                &[],
                &["head", "value", "volcano"],
                true,
                Some(true),
            ), // TestGlobMatch_leadingAsterisks_isDirAtEnd
            (
                "**/*lue/vol?ano/",
                &[],
                &["head", "value", "Colcano"],
                true,
                None,
            ), // TestGlobMatch_leadingAsterisks_isDir_mismatch
            (
                "**/*lue/vol?ano/",
                &[],
                &["head", "value", "volcano"],
                false,
                None,
            ), // TestGlobMatch_leadingAsterisks_isDirNoDirAtEnd_mismatch
            (
                "/*lue/vol?ano/**",
                &[],
                &["value", "volcano", "tail", "moretail"],
                false,
                Some(true),
            ), // TestGlobMatch_tailingAsterisks
            (
                "/*lue/vol?ano/**",
                &[],
                &["value", "volcano"],
                false,
                Some(true),
            ), // TestGlobMatch_tailingAsterisks_exactMatch
            (
                "/*lue/**/vol?ano",
                &[],
                &["value", "volcano"],
                false,
                Some(true),
            ), // TestGlobMatch_middleAsterisks_emptyMatch
            (
                "/*lue/**/vol?ano",
                &[],
                &["value", "middle", "volcano"],
                false,
                Some(true),
            ), // TestGlobMatch_middleAsterisks_oneMatch
            (
                "/*lue/**/vol?ano",
                &[],
                &["value", "middle1", "middle2", "volcano"],
                false,
                Some(true),
            ), // TestGlobMatch_middleAsterisks_multiMatch
            (
                "/*lue/**/vol?ano/",
                &[],
                &["value", "middle1", "middle2", "volcano"],
                true,
                Some(true),
            ), // TestGlobMatch_middleAsterisks_isDir_trailing
            (
                "/*lue/**/vol?ano/",
                &[],
                &["value", "middle1", "middle2", "volcano"],
                false,
                None,
            ), // TestGlobMatch_middleAsterisks_isDir_trailing_mismatch
            (
                "/*lue/**/vol?ano/",
                &[],
                &["value", "middle1", "middle2", "volcano", "tail"],
                false,
                Some(true),
            ), // TestGlobMatch_middleAsterisks_isDir
            (
                "/*lue/**foo/vol?ano",
                &[],
                &["value", "foo", "volcano", "tail"],
                false,
                None,
            ), // TestGlobMatch_wrongDoubleAsterisk_mismatch
            (
                "**/head/v[ou]l[kc]ano",
                &[],
                &["value", "head", "volcano"],
                false,
                Some(true),
            ), // TestGlobMatch_magicChars
            (
                "**/head/v[ou]l[",
                &[],
                &["value", "head", "vol["],
                false,
                None,
            ), // TestGlobMatch_wrongPattern_noTraversal_mismatch
            (
                "/value/**/v[ou]l[",
                &[],
                &["value", "head", "vol["],
                false,
                None,
            ), // TestGlobMatch_wrongPattern_onTraversal_mismatch
            (
                "**/android/**/GeneratedPluginRegistrant.java",
                &[],
                &[
                    "packages",
                    "flutter_tools",
                    "lib",
                    "src",
                    "android",
                    "gradle.dart",
                ],
                false,
                None,
            ), // TestGlobMatch_issue_923
            // This module's own: escapes, trailing spaces, malformed and `**` inside a part.
            ("a\\ ", &[], &["a "], false, Some(true)),
            ("a  ", &[], &["a"], false, Some(true)),
            ("\\#a", &[], &["#a"], false, Some(true)),
            ("[^a]b", &[], &["xb"], false, Some(true)),
            ("[!a]b", &[], &["xb"], false, None),
            ("[", &[], &["["], false, None),
            ("a**b/c", &[], &["axb", "c"], false, None),
            ("/foo", &["sub"], &["sub", "x", "foo"], false, None),
            // The shapes compared directly, and their neighbours that are not.
            ("abc*", &[], &["abcd"], false, Some(true)),
            ("abc*", &[], &["xabc"], false, None),
            ("*.yaml", &[], &["x", "a.yaml"], false, Some(true)),
            ("*.yaml", &[], &["a.yml"], false, None),
            ("*", &[], &["anything"], false, Some(true)),
            ("a*c", &[], &["abbc"], false, Some(true)),
            ("*a*", &[], &["bab"], false, Some(true)),
        ];
        let work = Work(Cell::new(WORK));
        for (p, domain, path, dir, want) in cases {
            let domain: Vec<String> = domain.iter().map(|d| d.to_string()).collect();
            let r = Rule::parse(p.as_bytes(), &domain, Origin::Default("t"));
            assert_eq!(
                r.judge(path, *dir, &work).unwrap(),
                *want,
                "{p:?} in {domain:?} on {path:?} (dir {dir})"
            );
        }
        let m = rules(&[(".sourceignore", "**/middle/v[uo]l?ano\n!volcano\n")]);
        assert!(out(&m, "head/middle/vulkano", false));
        assert!(!out(&m, "head/middle/volcano", false));
    }

    /// source-controller's choice of patterns (fluxcd/pkg `artifact/storage/archive.go`,
    /// `SourceIgnoreFilter`): version control always, the other defaults only without patterns
    /// of the tree's own; the last matching pattern wins, so `!` re-includes a file whose
    /// directory is left out.
    #[test]
    fn defaults_and_priorities() {
        let none = rules(&[]);
        for p in [
            ".git/config",
            "sub/.gitignore",
            "logo.png",
            ".github/workflows/ci.yml",
            "a/.sops.yaml",
            "x.tar.gz",
        ] {
            assert!(out(&none, p, false), "{p}");
        }
        assert!(!out(&none, "deploy/app.yaml", false));
        let own = rules(&[(".sourceignore", "# drafts\n\ndrafts/\n!drafts/keep.yaml\n")]);
        assert!(out(&own, ".git/HEAD", false), "version control, always");
        assert!(
            !out(&own, "logo.png", false),
            "no defaults beside the tree's own"
        );
        assert!(out(&own, "drafts/a.yaml", false));
        assert!(!out(&own, "drafts/keep.yaml", false));
        // A directory's file scopes its patterns below it, and comes after its parent's.
        let nested = rules(&[
            ("apps/.sourceignore", "!secret.yaml\n"),
            (".sourceignore", "secret.yaml\n"),
        ]);
        assert!(out(&nested, "secret.yaml", false));
        assert!(out(&nested, "other/secret.yaml", false));
        assert!(!out(&nested, "apps/secret.yaml", false));
        match nested.excluding("other/secret.yaml", false).unwrap() {
            Some(Origin::File { file, line, .. }) => {
                assert_eq!((file.as_str(), *line), (".sourceignore", 1))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn long_lines_end_a_file_as_flux_reads_it() {
        let text = format!("a.yaml\n{}\nb.yaml\n", "x".repeat(MAX_LINE));
        let (r, w) = Rules::new(&[(".sourceignore".into(), text.into_bytes())]);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].line, Some(2));
        assert!(out(&r, "a.yaml", false));
        assert!(!out(&r, "b.yaml", false));
        // CRLF lines, as Go's scanner drops the carriage return.
        let r = rules(&[(".sourceignore", "c.yaml\r\n")]);
        assert!(out(&r, "c.yaml", false));
    }

    /// Many patterns against long names run out of work instead of running on; the same
    /// rules with work to spare give an answer.
    #[test]
    fn matching_is_bounded() {
        let many = "[a-z]*[a-z]*[a-z]*x\n".repeat(2_000);
        let files = [(".sourceignore".to_string(), many.into_bytes())];
        let name = format!("{}/{}", "d".repeat(200), "y".repeat(200));
        let (r, _) = Rules::with_work(&files, 1 << 20);
        assert_eq!(r.excluding(&name, false), Err(Spent));
        let (r, _) = Rules::new(&files);
        assert_eq!(r.excluding(&name, false), Ok(None));
    }
}
