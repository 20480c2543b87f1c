//! `kiln snapshot create` and `kiln promote`: translate the command line into
//! `kiln_core::component` calls (`snapshot create` reads its inputs through the request walk,
//! as `render` does); git access (promotion) lives here, at the edge.
//!
//! Repository layout used by `kiln promote` (see docs/component-types.md):
//!
//! ```text
//! environments/<env>/<component>.snapshot.yaml     ComponentEnvSnapshot (written by kiln)
//! environments/<env>/<component>.deployment.yaml   ComponentDeployment (maintained by hand)
//! ```
//!
//! Promotion copies every snapshot of `environments/<from>/` (or the one of `--component`) into
//! `environments/<to>/` under the same file name, retargeted to the new environment (same content
//! and digest), and commits exactly those files. It refuses a dirty working tree and never pushes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use kiln_core::component::{self, snapshot, Options};
use kiln_core::diag::{codes, Diagnostic, Diagnostics};
use kiln_core::document::SourceFile;
use kiln_core::request;
use kiln_core::source::{load_inputs_with_files, Input};

use crate::contents::{self, Kind};
use crate::Common;

/// Flags of `kiln snapshot create`.
#[derive(clap::Args, Debug)]
pub struct SnapshotCreateArgs {
    /// The Component to snapshot (its metadata.name).
    #[arg(long)]
    component: String,
    /// The environment the snapshot is for.
    #[arg(long)]
    env: String,
    /// Write the snapshot to this file (replaced atomically) instead of stdout.
    #[arg(long, short = 'o')]
    output: Option<PathBuf>,
    /// Files or directories holding the Component, its ComponentTypeDefinition, Addons, Workload
    /// and (optionally) the environment's ComponentDeployment. Defaults to the current directory.
    paths: Vec<String>,
}

/// Flags of `kiln promote`.
#[derive(clap::Args, Debug)]
pub struct PromoteArgs {
    /// The environment to promote from.
    #[arg(long)]
    from: String,
    /// The environment to promote to.
    #[arg(long)]
    to: String,
    /// Promote only this component's snapshot (default: every snapshot of the source environment).
    #[arg(long)]
    component: Option<String>,
    /// The git repository (its working tree).
    #[arg(long, default_value = ".")]
    repo: PathBuf,
    /// Folder of an environment inside the repository; `{env}` is replaced by its name.
    #[arg(long, default_value = "environments/{env}")]
    layout: String,
}

fn fail(diags: Vec<Diagnostic>, files: &[Arc<SourceFile>], common: &Common) -> ExitCode {
    crate::report::print(&diags, files, common.diagnostics);
    ExitCode::from(1)
}

fn error(code: kiln_core::diag::Code, msg: impl Into<String>, hint: &str) -> Diagnostic {
    Diagnostic::error(code, msg).with_hint(hint)
}

/// Write a file by writing a sibling temporary file and renaming it, so readers never see half a
/// file.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.kiln-tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
}

/// `kiln snapshot create`: the inputs read as `render` reads them (the request walk), the
/// component documents among them snapshotted; what else they hold (kro definitions and
/// instances, kurel packages, plain manifests, kustomizations) is named on stderr and skipped.
pub fn snapshot_create(args: &SnapshotCreateArgs, common: &Common) -> ExitCode {
    let limits = common.limits();
    let loaded = match request::definitions(&crate::definitions_request(&args.paths, common)) {
        Ok(d) => d,
        Err(failed) => return crate::fail(&failed, common.diagnostics),
    };
    let skipped = contents::skipped(&loaded, Kind::Components);
    if !skipped.is_empty() && common.diagnostics == crate::report::DiagFormat::Human {
        eprintln!(
            "note: kiln snapshot create reads component documents; skipped {}",
            skipped.join(", ")
        );
    }
    let opts = Options {
        env: Some(args.env.clone()),
        namespace: common.namespace.clone(),
        expr: limits.expr,
        eval: limits.eval,
        max_collection_size: limits.component_collection_size,
        ..Options::default()
    };
    let (snap, warnings) =
        match component::create_snapshot(&loaded.documents, &args.component, &args.env, &opts) {
            Ok(x) => x,
            Err(mut d) => {
                d.sort();
                return fail(d.0, &loaded.files, common);
            }
        };
    if !warnings.is_empty() {
        crate::report::print(&warnings, &loaded.files, common.diagnostics);
        if common.strict {
            return ExitCode::from(1);
        }
    }
    let text = match kiln_core::output::to_yaml(&snap) {
        Ok(t) => t,
        Err(d) => return fail(vec![d], &loaded.files, common),
    };
    if let Some(path) = &args.output {
        if let Err(d) = kiln_core::limits::check_output_size(text.len(), limits.output_bytes) {
            return fail(vec![d.in_file(path.display().to_string())], &[], common);
        }
    }
    match &args.output {
        None => crate::emit(&text),
        Some(path) => match write_atomic(path, &text) {
            Ok(()) => {
                if common.diagnostics == crate::report::DiagFormat::Human {
                    eprintln!(
                        "wrote snapshot of {} for {} to {} ({})",
                        args.component,
                        args.env,
                        path.display(),
                        snapshot::digest(&snap)
                    );
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(
                vec![error(
                    codes::PROMOTE_FAILED,
                    format!("cannot write {}: {e}", path.display()),
                    "check that the folder exists and is writable",
                )],
                &[],
                common,
            ),
        },
    }
}

/// Paths with uncommitted changes (modified, staged, untracked; ignored files do not count).
fn dirty_paths(repo: &git2::Repository) -> Result<Vec<String>, git2::Error> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false);
    let statuses = repo.statuses(Some(&mut opts))?;
    Ok(statuses
        .iter()
        .filter(|s| {
            s.status() != git2::Status::CURRENT && !s.status().contains(git2::Status::IGNORED)
        })
        .map(|s| s.path().unwrap_or("?").to_string())
        .collect())
}

struct Promotion {
    component: String,
    digest: String,
    /// Path of the written file, relative to the working tree.
    rel: PathBuf,
}

/// `kiln promote`.
pub fn promote(args: &PromoteArgs, common: &Common) -> ExitCode {
    match run_promote(args, common) {
        Ok(code) => code,
        Err((diags, files)) => fail(diags, &files, common),
    }
}

type Failure = (Vec<Diagnostic>, Vec<Arc<SourceFile>>);

fn git_fail(what: &str, e: &git2::Error) -> Failure {
    (
        vec![error(
            codes::PROMOTE_FAILED,
            format!("{what}: {}", e.message()),
            "kiln promote works on a local, non-bare git repository",
        )],
        Vec::new(),
    )
}

fn run_promote(args: &PromoteArgs, common: &Common) -> Result<ExitCode, Failure> {
    if args.from == args.to {
        return Err((
            vec![error(
                codes::PROMOTE_FAILED,
                format!(
                    "--from and --to are both {}",
                    kiln_core::diag::quote(&args.from)
                ),
                "promote between two different environments",
            )],
            Vec::new(),
        ));
    }
    let repo = git2::Repository::open(&args.repo).map_err(|e| {
        git_fail(
            &format!("cannot open repository {}", args.repo.display()),
            &e,
        )
    })?;
    let Some(workdir) = repo.workdir().map(Path::to_path_buf) else {
        return Err((
            vec![error(
                codes::PROMOTE_FAILED,
                "the repository is bare",
                "run kiln promote in a working tree",
            )],
            Vec::new(),
        ));
    };
    let dirty =
        dirty_paths(&repo).map_err(|e| git_fail("cannot read the working tree status", &e))?;
    if !dirty.is_empty() {
        let shown: Vec<&str> = dirty.iter().take(5).map(String::as_str).collect();
        return Err((
            vec![error(
                codes::DIRTY_TREE,
                format!(
                    "the working tree has uncommitted changes: {}{}",
                    shown.join(", "),
                    if dirty.len() > 5 { format!(" and {} more", dirty.len() - 5) } else { String::new() }
                ),
                "commit or discard the changes first; kiln promote commits only the promoted snapshots",
            )],
            Vec::new(),
        ));
    }
    let env_dir = |env: &str| PathBuf::from(args.layout.replace("{env}", env));
    let from_rel = env_dir(&args.from);
    let from_abs = workdir.join(&from_rel);
    if !from_abs.is_dir() {
        return Err((
            vec![error(
                codes::PROMOTE_FAILED,
                format!("environment folder {} does not exist", from_rel.display()),
                "create snapshots with kiln snapshot create -o environments/<env>/<component>.snapshot.yaml",
            )],
            Vec::new(),
        ));
    }
    // Every YAML file of the source folder; snapshots are recognised by kind, not by name.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&from_abs)
        .map_err(|e| {
            (
                vec![error(
                    codes::PROMOTE_FAILED,
                    format!("cannot read {}: {e}", from_rel.display()),
                    "check permissions",
                )],
                Vec::new(),
            )
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file() && matches!(p.extension().and_then(|x| x.to_str()), Some("yaml" | "yml"))
        })
        .collect();
    files.sort();
    let inputs: Vec<Input> = files.iter().map(|p| Input::Path(p.clone())).collect();
    let loaded = load_inputs_with_files(&inputs, &common.limits().yaml);
    if loaded.diagnostics.has_errors() {
        return Err((loaded.diagnostics.0, loaded.files));
    }
    let mut promotions = Vec::new();
    let mut diags = Diagnostics::new();
    for doc in &loaded.documents {
        if doc.kind() != Some("ComponentEnvSnapshot") {
            continue;
        }
        let info = match component::check_snapshot(doc) {
            Ok(i) => i,
            Err(d) => {
                diags.extend(d.0);
                continue;
            }
        };
        if args
            .component
            .as_deref()
            .is_some_and(|c| c != info.component)
        {
            continue;
        }
        if info.environment != args.from {
            diags.push(
                Diagnostic::error(
                    codes::PROMOTE_FAILED,
                    format!(
                        "snapshot of {:?} is for environment {:?}, but lies in the folder of {:?}",
                        info.component, info.environment, args.from
                    ),
                )
                .in_file(doc.file())
                .with_hint(
                    "move it to its environment's folder or recreate it with kiln snapshot create",
                ),
            );
            continue;
        }
        let file_name = Path::new(doc.file())
            .file_name()
            .map(|n| n.to_owned())
            .unwrap_or_default();
        let rel = env_dir(&args.to).join(file_name);
        let text = match kiln_core::output::to_yaml(&snapshot::retarget(&doc.value, &args.to)) {
            Ok(t) => t,
            Err(d) => {
                diags.push(d);
                continue;
            }
        };
        promotions.push((
            Promotion {
                component: info.component,
                digest: info.digest,
                rel,
            },
            text,
        ));
    }
    if diags.has_errors() {
        diags.sort();
        return Err((diags.0, loaded.files));
    }
    if promotions.is_empty() {
        return Err((
            vec![error(
                codes::PROMOTE_FAILED,
                match &args.component {
                    Some(c) => format!("no snapshot of {} in {}", kiln_core::diag::quote(c), from_rel.display()),
                    None => format!("no ComponentEnvSnapshot in {}", from_rel.display()),
                },
                "create one with kiln snapshot create --component NAME --env ENV -o <folder>/<component>.snapshot.yaml",
            )],
            loaded.files,
        ));
    }
    let mut changed = Vec::new();
    for (p, text) in &promotions {
        let abs = workdir.join(&p.rel);
        if std::fs::read_to_string(&abs).is_ok_and(|old| old == *text) {
            continue;
        }
        write_atomic(&abs, text).map_err(|e| {
            (
                vec![error(
                    codes::PROMOTE_FAILED,
                    format!("cannot write {}: {e}", p.rel.display()),
                    "check permissions",
                )],
                Vec::new(),
            )
        })?;
        changed.push(p);
    }
    if changed.is_empty() {
        if common.diagnostics == crate::report::DiagFormat::Human {
            eprintln!(
                "nothing to promote: {} already has these snapshots",
                args.to
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let id =
        commit(&repo, &changed, &args.from, &args.to).map_err(|e| git_fail("cannot commit", &e))?;
    let report: String = changed
        .iter()
        .map(|p| {
            format!(
                "promoted {} from {} to {} ({}) in commit {id}\n",
                p.component, args.from, args.to, p.digest
            )
        })
        .collect();
    Ok(crate::emit(&report))
}

/// Stage the promoted files and commit them on HEAD. Message: `promote <components> from <from>
/// to <to>`, then one `<component>: <digest>` line each.
fn commit(
    repo: &git2::Repository,
    changed: &[&Promotion],
    from: &str,
    to: &str,
) -> Result<git2::Oid, git2::Error> {
    let mut index = repo.index()?;
    for p in changed {
        index.add_path(&p.rel)?;
    }
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let sig = repo
        .signature()
        .or_else(|_| git2::Signature::now("kiln", "kiln@localhost"))?;
    let names: Vec<&str> = changed.iter().map(|p| p.component.as_str()).collect();
    let mut message = format!("promote {} from {from} to {to}\n\n", names.join(", "));
    for p in changed {
        message.push_str(&format!("{}: {}\n", p.component, p.digest));
    }
    let parent = match repo.head() {
        Ok(h) => Some(h.peel_to_commit()?),
        Err(_) => None,
    };
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, &message, &tree, &parents)
}
