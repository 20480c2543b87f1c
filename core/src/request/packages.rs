//! The kurel packages of a request, each rendered on its own with the request's overrides.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use super::duplicates::Checked;
use super::reuse::{package_context, KurelRecorded, Reuse};
use super::{PackageSummary, Request};
use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::{Document, SourceFile};
use crate::kurel;
use crate::source::{Access, FoundPackage};

/// One kurel package rendered.
pub(super) struct PackageOutput<T> {
    pub(super) units: Vec<T>,
    pub(super) instance_names: Vec<String>,
    pub(super) warnings: Vec<Diagnostic>,
    pub(super) log: Vec<String>,
    pub(super) details: Vec<String>,
    pub(super) files: Vec<Arc<SourceFile>>,
    pub(super) summary: PackageSummary,
    /// For the other side of a diff ([`Reuse::keeps_kurel`]): the package's context and each
    /// instance's file and record, in instance order (unit indices are the caller's to add).
    pub(super) kept: Option<KurelRecorded>,
}

pub(super) type PackageFailure = (Vec<Diagnostic>, Vec<Arc<SourceFile>>);

/// Render one kurel package of the request. With `reuse` (a side of a diff), its instances are
/// exchanged with the other side's render of the same package in the same context.
pub(super) fn render_package<T, F>(
    req: &Request,
    access: &Access,
    found: &FoundPackage,
    run_crds: &[Value],
    finish: &F,
    reuse: Option<&dyn Reuse<T>>,
) -> Result<PackageOutput<Checked<T>>, PackageFailure>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<Checked<T>, Diagnostic> + Sync,
{
    let limits = &req.limits;
    let package =
        match kurel::load_with_buffers(&found.path, &limits.yaml, Some(req.buffers.clone())) {
            Ok(p) => p,
            Err(e) => {
                // Broken patch files do not hide the rest: the package without them is checked
                // too. A patch that requires a broken one is explained by the broken one's errors.
                let mut diags = e.diagnostics.0;
                if let Some(partial) = e.partial {
                    let options = kurel::Options {
                        namespace: req.namespace.clone(),
                        max_depth: req.kurel_max_depth.unwrap_or(limits.variable_depth),
                        crds: run_crds.to_vec(),
                        provenance: false,
                        details: true,
                    };
                    let rest =
                        kurel::Prepared::new(&partial, &kurel::Instance::default(), &options)
                            .and_then(|p| p.render(None).map(|_| ()));
                    if let Err(more) = rest {
                        diags.extend(
                            more.0
                                .into_iter()
                                .filter(|d| d.is_error() && d.code != codes::KUREL_PATCH_REFERENCE),
                        );
                    }
                }
                return Err((diags, e.files));
            }
        };
    let mut files = package.files.clone();
    // The request's overrides: checked above to belong to this package alone.
    let (values, vfiles, mut diags) = read_values(access, &req.values, &limits.yaml);
    let values_files = vfiles.clone();
    files.extend(vfiles);
    let mut instances = Vec::new();
    if let Some(dir) = &req.instances {
        let (docs, ifiles, idiags) = read_instances(access, dir, &limits.yaml);
        instances = docs;
        files.extend(ifiles);
        diags.extend(idiags);
    }
    if diags.has_errors() {
        return Err((diags.0, files));
    }
    let read_warnings = diags.0;
    let options = kurel::Options {
        namespace: req.namespace.clone(),
        max_depth: req.kurel_max_depth.unwrap_or(limits.variable_depth),
        crds: run_crds.to_vec(),
        provenance: !req.no_provenance,
        // A single render counts the patches it applied from them (its summary).
        details: !(req.kurel_no_details && req.instances.is_some()),
    };
    let common = kurel::Instance {
        values,
        sets: req.sets.clone(),
    };
    let prepared = match kurel::Prepared::new(&package, &common, &options) {
        Ok(p) => p,
        Err(ds) => {
            let mut all = read_warnings;
            all.extend(ds.0);
            return Err((all, files));
        }
    };
    let fail = |ds: Diagnostics, files: Vec<Arc<SourceFile>>| {
        let mut all = read_warnings.clone();
        all.extend(ds.0);
        (all, files)
    };
    if req.instances.is_none() {
        let r = prepared
            .render(None)
            .map_err(|ds| fail(ds, files.clone()))?;
        let applied = r
            .details
            .iter()
            .filter(|l| l.starts_with("applying "))
            .count();
        let summary = PackageSummary {
            name: package.metadata.name.clone(),
            version: package.metadata.version.clone(),
            objects: r.objects.len(),
            patches: package.patches.len(),
            applied: Some(applied),
            instances: None,
        };
        let unit = finish(r.objects).map_err(|d| (vec![d], files.clone()))?;
        let mut warnings = read_warnings.clone();
        warnings.extend(r.warnings);
        return Ok(PackageOutput {
            units: vec![unit],
            instance_names: Vec::new(),
            warnings,
            log: r.log,
            details: r.details,
            files,
            summary,
            kept: None,
        });
    }
    let context = reuse.map(|_| package_context(req, &package, &values_files, &options));
    let taking = reuse
        .zip(context.as_ref())
        .and_then(|(r, (c, holder))| r.kurel(c, holder));
    let keeping = reuse.is_some_and(|r| r.keeps_kurel());
    let exchange = match (&taking, keeping) {
        (Some(t), _) => kurel::Exchange::Take(&**t),
        (None, true) => kurel::Exchange::Keep,
        (None, false) => kurel::Exchange::None,
    };
    let count = instances.len();
    let r = kurel::render_instances_exchanging(&prepared, instances, finish, exchange)
        .map_err(|ds| fail(ds, files.clone()))?;
    let mut warnings = read_warnings.clone();
    warnings.extend(r.warnings);
    let kept = match context {
        Some((c, holder)) if keeping => Some((
            c,
            holder,
            r.sources
                .iter()
                .cloned()
                .zip(r.records)
                .enumerate()
                .map(|(i, (f, rec))| (f, i, rec))
                .collect(),
        )),
        _ => None,
    };
    Ok(PackageOutput {
        instance_names: r.sources.iter().map(|s| s.name.clone()).collect(),
        kept,
        summary: PackageSummary {
            name: package.metadata.name.clone(),
            version: package.metadata.version.clone(),
            objects: r.objects,
            patches: package.patches.len(),
            applied: None,
            instances: Some(count),
        },
        units: r.units,
        warnings,
        log: r.log,
        details: r.details,
        files,
    })
}

pub(super) fn read_values(
    access: &Access,
    paths: &[PathBuf],
    limits: &crate::document::YamlLimits,
) -> (Vec<Document>, Vec<Arc<SourceFile>>, Diagnostics) {
    let mut docs = Vec::new();
    let mut files = Vec::new();
    let mut diags = Diagnostics::new();
    for p in paths {
        let name = access.display_name(p);
        match access.read_to_string(p, limits.max_input_bytes) {
            Err(d) => diags.push(d.with_hint(values_hint(access))),
            Ok(text) => {
                let file = Arc::new(SourceFile { name, text });
                let (doc, ds) = kurel::values::parse_values_file(&file, limits);
                docs.extend(doc);
                files.push(file);
                diags.extend(ds);
            }
        }
    }
    (docs, files, diags)
}

pub(super) fn values_hint(access: &Access) -> &'static str {
    match access {
        Access::AsGiven => "check the path of the values file",
        Access::Within(_) => {
            "values files are read inside the root this run was given, which they may not leave"
        }
    }
}

pub(super) fn read_instances(
    access: &Access,
    dir: &Path,
    limits: &crate::document::YamlLimits,
) -> (Vec<Document>, Vec<Arc<SourceFile>>, Diagnostics) {
    let display = access.display_name(dir);
    match access.resolve(dir) {
        Err(d) => {
            let mut diags = Diagnostics::new();
            diags.push(d.with_hint(
                "the instances directory is read inside the root this run was given, which it may not leave",
            ));
            (Vec::new(), Vec::new(), diags)
        }
        Ok(real) => {
            // The directory itself is the root its files may not leave (a symlinked instance
            // file pointing elsewhere is refused), whoever named it.
            match crate::source::Root::named(&real, PathBuf::from(&display)) {
                Err(d) => {
                    let mut diags = Diagnostics::new();
                    diags.push(d);
                    (Vec::new(), Vec::new(), diags)
                }
                Ok(root) => kurel::values::read_instances_dir(&root, "", limits),
            }
        }
    }
}
