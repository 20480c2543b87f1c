//! The workspace of an editor: the request `kiln validate` would read for a folder, with the
//! editor's unsaved buffers over the files on disk, and its diagnostics with exact ranges.
//!
//! Every check is the whole request, run again: an RGD's change re-checks the instances of its
//! kind in other files because they are one run, as they are for `kiln validate DIR`. The files
//! are the walk's (the same walk and classification as `kiln validate DIR`); a buffer replaces the
//! text of the file of its name and adds no file the walk does not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::Texts;
use crate::diag::Diagnostic;
use crate::redact::Secrets;
use crate::request::{self, Request};
use crate::source::Input;

/// A folder checked as `kiln validate` checks it, with the editor's buffers.
#[derive(Debug, Clone)]
pub struct Workspace {
    /// The folder, named as diagnostics name its files' prefix (an absolute path for an editor).
    root: PathBuf,
    /// CustomResourceDefinitions that check templates of their kinds (`--crds`).
    crds: Vec<PathBuf>,
    /// Open buffers: file (as diagnostics name it) → text.
    buffers: BTreeMap<String, String>,
    /// The files given diagnostics by the last [`Workspace::diagnostics`], to clear them.
    published: BTreeSet<String>,
    /// The texts of every file the last run read, buffers over them.
    texts: Texts,
    /// The secret values the last run found: what an answer quoting the texts must blank.
    secrets: Secrets,
}

/// What [`Workspace::diagnostics`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Published {
    /// File → every diagnostic in it, in `kiln validate`'s order. A file that had diagnostics
    /// in the previous call and has none now is here with an empty list, so an editor clears it.
    pub files: BTreeMap<String, Vec<Diagnostic>>,
    /// Diagnostics about no file (an empty folder, an unknown Kubernetes version).
    pub unplaced: Vec<Diagnostic>,
}

impl Workspace {
    /// The workspace of the folder `root`. Files are named as `kiln validate ROOT` names them:
    /// give an absolute path and every name is an absolute path.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            crds: Vec::new(),
            buffers: BTreeMap::new(),
            published: BTreeSet::new(),
            texts: Texts::new(),
            secrets: Secrets::default(),
        }
    }

    /// The CRD files or directories (`kiln validate --crds`).
    pub fn with_crds(mut self, crds: Vec<PathBuf>) -> Self {
        self.crds = crds;
        self
    }

    /// The folder.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// The editor's text of `file` (opened or changed), read instead of the file on disk.
    pub fn set_text(&mut self, file: &str, text: String) {
        self.texts.insert(file.to_string(), text.clone());
        self.buffers.insert(file.to_string(), text);
    }

    /// `file`'s buffer is closed: the file on disk is read again.
    pub fn close(&mut self, file: &str) {
        self.buffers.remove(file);
        self.texts.remove(file);
    }

    /// The text of every file the last check read, buffers over them (and every open buffer):
    /// what the questions at a position ([`super::hover()`], …) are asked over.
    pub fn texts(&self) -> &Texts {
        &self.texts
    }

    /// The request `kiln validate ROOT` (with `--crds`) runs, buffers over the files.
    pub fn request(&self) -> Request {
        Request {
            inputs: vec![Input::Path(self.root.clone())],
            crds: self.crds.clone(),
            buffers: Arc::new(self.buffers.clone()),
            ..Request::default()
        }
        .for_validation()
    }

    /// `text` (an answer quoting the workspace's texts: a hover, a completion's detail) with
    /// every secret value the last check found blanked, as `kiln validate` blanks diagnostics.
    pub fn redact(&self, text: &str) -> String {
        self.secrets.redact(text)
    }

    /// Check the workspace: every diagnostic `kiln validate` gives for it, per file, with the
    /// values of secrets blanked as `kiln validate` blanks them.
    pub fn diagnostics(&mut self) -> Published {
        let req = self.request();
        let (diagnostics, files) =
            match request::render_units(&req, |objects| Ok(secret_objects(objects))) {
                Ok(r) => {
                    let kept: Vec<Value> = r.units.concat();
                    self.secrets = r.secrets(&[], &kept);
                    (r.redacted_warnings(&[], &kept), r.files)
                }
                Err(failed) => {
                    self.secrets = failed.secrets(&[]);
                    (failed.redacted(&[]), failed.files)
                }
            };
        self.texts = files
            .iter()
            .map(|f| (f.name.clone(), f.text.clone()))
            .collect();
        for (name, text) in &self.buffers {
            self.texts.insert(name.clone(), text.clone());
        }
        let mut out = Published::default();
        for d in diagnostics {
            match &d.file {
                Some(f) => out.files.entry(f.clone()).or_default().push(d),
                None => out.unplaced.push(d),
            }
        }
        for gone in &self.published {
            out.files.entry(gone.clone()).or_default();
        }
        self.published = out
            .files
            .iter()
            .filter(|(_, ds)| !ds.is_empty())
            .map(|(f, _)| f.clone())
            .collect();
        out
    }
}

/// The rendered objects redaction must know about: the Secrets (what `kiln validate` keeps).
fn secret_objects(objects: Vec<Value>) -> Vec<Value> {
    objects
        .into_iter()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("Secret"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::codes;

    const RGD: &str = "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: tests.kro.run
spec:
  schema:
    apiVersion: v1alpha1
    kind: Test
    spec:
      name: string
  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.spec.name}
";
    const INSTANCE: &str = "apiVersion: kro.run/v1alpha1
kind: Test
metadata:
  name: one
spec:
  name: one
";

    fn folder() -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rgd.yaml"), RGD).unwrap();
        std::fs::write(dir.path().join("instance.yaml"), INSTANCE).unwrap();
        let root = dir.path().display().to_string();
        (dir, root)
    }

    fn codes_of(p: &Published, file: &str) -> Vec<&'static str> {
        p.files
            .get(file)
            .map(|ds| ds.iter().map(|d| d.code.id).collect())
            .unwrap_or_default()
    }

    #[test]
    fn buffers_over_disk_cross_file_and_cleared_files() {
        let (_dir, root) = folder();
        let rgd = format!("{root}/rgd.yaml");
        let instance = format!("{root}/instance.yaml");
        let mut ws = Workspace::new(&root);
        let p = ws.diagnostics();
        assert!(p.files.is_empty() && p.unplaced.is_empty(), "{p:?}");
        assert_eq!(ws.texts().get(&rgd).map(String::as_str), Some(RGD));

        // A misspelt field in the unsaved RGD: the expression's exact range.
        ws.set_text(&rgd, RGD.replace("spec.name}", "spec.nme}"));
        let p = ws.diagnostics();
        let d = &p.files[&rgd][0];
        assert_eq!(d.code, codes::TYPE_CHECK);
        assert_eq!(
            (d.line, d.column, d.end_line, d.end_column),
            (Some(17), Some(17), Some(17), Some(35))
        );

        // The RGD's schema changes in its buffer: the instance in the other file is checked
        // against it.
        ws.set_text(
            &rgd,
            RGD.replace("name: string", "name: string | maxLength=2"),
        );
        let p = ws.diagnostics();
        assert_eq!(codes_of(&p, &instance), ["KLN5001"], "{p:?}");
        assert_eq!(p.files[&rgd], Vec::new(), "the RGD's error is cleared");

        // Closed: the file on disk again, and the instance's diagnostic is cleared.
        ws.close(&rgd);
        let p = ws.diagnostics();
        assert_eq!(p.files.get(&instance), Some(&Vec::new()), "{p:?}");
        let p = ws.diagnostics();
        assert!(p.files.is_empty(), "cleared once: {p:?}");
    }

    #[test]
    fn malformed_yaml_is_a_diagnostic() {
        let (_dir, root) = folder();
        let rgd = format!("{root}/rgd.yaml");
        let mut ws = Workspace::new(&root);
        for text in ["spec: [", "a: \"", "\t- x", "${", ": :"] {
            ws.set_text(&rgd, text.to_string());
            let p = ws.diagnostics();
            assert!(
                p.files.get(&rgd).is_some_and(|ds| !ds.is_empty()),
                "{text:?}: {p:?}"
            );
        }
    }
}
