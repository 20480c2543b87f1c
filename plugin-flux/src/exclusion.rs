//! What of a build's tree Flux's artifact holds: source-controller's exclusion rules
//! ([`kiln_core::flux::sourceignore`]) applied where source-controller applies them, to the
//! tree Flux receives, which is what kiln-flux writes.
//!
//! The rules are the `.sourceignore` files of the artifact's root (`build PATH`: the tree;
//! `--kustomization`: `--source-root`, as source-controller archives a whole source), and
//! without any pattern source-controller's defaults. A file the rules leave out:
//!
//! - is not read when it could not matter (a file kiln only copies: hidden, a kustomization, not
//!   a manifest), so a large archive or image the defaults leave out never meets the size limit;
//! - is left out of what the build writes (stream, directory, artifact) and of the preview;
//! - is a warning when kiln generated it (a release `STEM.ENV.yaml`, a package's `NAME.yaml`):
//!   Flux would not apply what kiln rendered there.
//!
//! Manifests are read and rendered even when left out: a definition in an excluded file still
//! renders the instances that are kept, as it would in the tree before Flux.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use kiln_core::diag::{codes, Diagnostic};
use kiln_core::flux::sourceignore::{self, Rules, IGNORE_FILE};
use kiln_core::inplace::{is_copied, tree, OutFile};

/// The rules of the artifact rooted at a directory.
pub struct Exclusion {
    /// Matching counts its work, so the rules are used by one thread at a time.
    rules: Mutex<Rules>,
    /// The root, as given.
    root: PathBuf,
}

impl Exclusion {
    /// Read the `.sourceignore` files of `root`; also the warnings of reading them.
    pub fn load(
        root: &Path,
        max_file_bytes: usize,
    ) -> Result<(Exclusion, Vec<Diagnostic>), Vec<Diagnostic>> {
        let files = tree::files_named(root, IGNORE_FILE, max_file_bytes).map_err(|ds| ds.0)?;
        let files: Vec<(String, Vec<u8>)> = files.into_iter().map(|f| (f.rel, f.bytes)).collect();
        let (rules, warnings) = Rules::new(&files);
        Ok((
            Exclusion {
                rules: Mutex::new(rules),
                root: root.to_path_buf(),
            },
            warnings,
        ))
    }

    /// Where `dir` lies below the root (`deploy/`), or empty.
    fn prefix(&self, dir: &Path) -> String {
        let real = |p: &Path| std::fs::canonicalize(p).ok();
        match (real(&self.root), real(dir)) {
            (Some(r), Some(d)) => match d.strip_prefix(&r).ok().and_then(Path::to_str) {
                Some("") | None => String::new(),
                Some(p) => format!("{p}/"),
            },
            _ => String::new(),
        }
    }

    /// The pattern leaving out the file at `rel` below the root, if one does.
    fn excluding(&self, rel: &str) -> Result<Option<String>, Diagnostic> {
        let rules = self.rules.lock().unwrap_or_else(|p| p.into_inner());
        match rules.excluding(rel, false) {
            Ok(o) => Ok(o.map(ToString::to_string)),
            Err(_) => Err(sourceignore::spent()),
        }
    }

    /// Read the tree at `dir` (the root, or below it), leaving unread what the build only
    /// copies and the rules leave out.
    pub fn read_tree(
        &self,
        dir: &Path,
        max_file_bytes: usize,
    ) -> Result<Vec<tree::File>, Vec<Diagnostic>> {
        let prefix = self.prefix(dir);
        let spent = Mutex::new(None);
        let skip = |rel: &str| {
            is_copied(rel)
                && match self.excluding(&format!("{prefix}{rel}")) {
                    Ok(o) => o.is_some(),
                    Err(d) => {
                        *spent.lock().unwrap_or_else(|p| p.into_inner()) = Some(d);
                        false
                    }
                }
        };
        let files = tree::read_except(&self.root, dir, max_file_bytes, &skip).map_err(|ds| ds.0)?;
        match spent.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some(d) => Err(vec![d]),
            None => Ok(files),
        }
    }

    /// The files of `out`, the build's output for the tree at `dir`, that Flux's artifact
    /// holds; a warning for each one kiln generated (not among `read`, the tree's own files)
    /// that the rules leave out.
    pub fn keep(
        &self,
        dir: &Path,
        out: Vec<OutFile>,
        read: &BTreeSet<String>,
    ) -> Result<(Vec<OutFile>, Vec<Diagnostic>), Vec<Diagnostic>> {
        let prefix = self.prefix(dir);
        let mut kept = Vec::with_capacity(out.len());
        let mut warnings = Vec::new();
        for f in out {
            let at = format!("{prefix}{}", f.rel);
            match self.excluding(&at).map_err(|d| vec![d])? {
                None => kept.push(f),
                Some(_) if read.contains(&f.rel) => {}
                Some(by) => warnings.push(
                    Diagnostic::warning(
                        codes::SOURCE_IGNORED,
                        format!(
                            "{at} is rendered, but Flux's artifact leaves it out ({by}): Flux would not apply its objects"
                        ),
                    )
                    .in_file(at.clone())
                    .with_hint(format!(
                        "change the {IGNORE_FILE} pattern, or the name of what renders there"
                    )),
                ),
            }
        }
        Ok((kept, warnings))
    }

    /// The files of the source root outside the build's tree (`files`, paths below the root)
    /// the artifact holds.
    pub fn keep_others(&self, files: Vec<OutFile>) -> Result<Vec<OutFile>, Vec<Diagnostic>> {
        let mut kept = Vec::with_capacity(files.len());
        for f in files {
            if self.excluding(&f.rel).map_err(|d| vec![d])?.is_none() {
                kept.push(f);
            }
        }
        Ok(kept)
    }
}
