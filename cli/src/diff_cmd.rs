//! `kiln diff`: the rendered objects of two revisions of a repository (or two environments),
//! compared object by object. This module only reads git (revisions from the repository's
//! objects with `git2`; nothing is checked out, the working tree and index are never touched),
//! builds the two requests and prints; rendering is `kiln_core::request` and the comparison
//! `kiln_core::diff`.

use std::io::IsTerminal;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::ValueEnum;
use kiln_core::diag::{codes, Diagnostic};
use kiln_core::diff::Unit;
use kiln_core::document::SourceFile;
use kiln_core::request::{self, Failed, Rendered};
use kiln_core::source::{Input, Root, Snapshot};
use serde_json::Value;

use crate::report::{self, DiagFormat};
use crate::{kurel_cmd, Common, StrategyArgs};

/// Exit status when a side does not render (or the repository cannot be read): distinct from
/// 1, which `--exit-code` gives to "there are differences".
const SIDE_FAILED: u8 = 4;

/// Flags of `kiln diff`.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// Files or directories to render on both sides, inside one git repository (default: the
    /// current directory).
    pub paths: Vec<String>,
    /// The base revision: any revision git accepts (a branch, a tag, `origin/main`, `HEAD~3`, a
    /// commit, `A...B` for the merge base of A and B) [default: HEAD, or the head side itself
    /// with --base-env].
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// The head revision [default: the working tree, uncommitted and untracked files included].
    #[arg(long, value_name = "REV")]
    pub head: Option<String>,
    /// Environment to render components for (the head side's; the base side's too unless
    /// --base-env names another).
    #[arg(long, value_name = "ENV")]
    pub env: Option<String>,
    /// The base side's environment: compare two environments (what a promotion would change).
    /// Without --base, both sides are the same revision.
    #[arg(long, value_name = "ENV", requires = "env")]
    pub base_env: Option<String>,
    /// Output format: text (coloured on a terminal), markdown (for a pull-request comment) or
    /// json.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Exit with status 1 when there are differences (as `git diff --exit-code`).
    #[arg(long)]
    pub exit_code: bool,
    /// Exit with status 4 when the base does not render, after writing the diff (the head's
    /// objects, all added, and a line saying why). Without it a base that does not render is
    /// reported, not a failure: the change that fixes a broken base must still get its diff.
    #[arg(long)]
    pub fail_on_base_error: bool,
    /// Lines of context around each change.
    #[arg(long, short = 'U', value_name = "N", default_value_t = 3)]
    pub context: usize,
    /// Colour the text output: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, value_enum, default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// markdown: the largest comment to write, in bytes; objects past it are counted, not
    /// shown (GitHub refuses comments over 65,536 characters).
    #[arg(long, value_name = "BYTES", default_value_t = 60_000)]
    pub markdown_limit: usize,
    /// A group whose kinds nothing in the run defines but that is meant to pass through
    /// unrendered (repeatable; `*` for every group), as for `kiln render`.
    #[arg(long = "pass-through", value_name = "GROUP")]
    pub pass_through: Vec<String>,
    /// Accept a side whose inputs hold no documents at all (an empty side: everything of the
    /// other is added or removed).
    #[arg(long)]
    pub allow_empty: bool,
}

/// Output formats of `kiln diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// A unified diff per changed object, added and removed objects, a summary line.
    Text,
    /// A summary table and a collapsible section per object, sized for a PR comment.
    Markdown,
    /// One JSON object: base, head, summary, objects.
    Json,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    /// On a terminal, unless NO_COLOR is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// What one side renders.
enum Source {
    /// The repository's working tree as it is on disk.
    WorkTree,
    /// A commit: its tree, read from the repository's objects.
    Commit { spec: String, oid: git2::Oid },
}

/// A usage problem: a message for stderr, exit 2.
fn usage(msg: impl std::fmt::Display, hint: &str) -> ExitCode {
    eprintln!("error[{}]: {msg}\n  hint: {hint}", codes::GIT_REVISION.id);
    ExitCode::from(2)
}

/// `kiln diff`.
pub fn run(
    args: &DiffArgs,
    strategy: &StrategyArgs,
    kurel: &kurel_cmd::KurelArgs,
    common: &Common,
) -> ExitCode {
    let paths: Vec<String> = if args.paths.is_empty() {
        vec![".".into()]
    } else {
        args.paths.clone()
    };
    if paths.iter().any(|p| p == "-") {
        return usage(
            "kiln diff reads no standard input (`-`)",
            "name files or directories of the repository: each side reads them from its own revision",
        );
    }
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            return usage(
                format!("cannot read the current directory: {e}"),
                "run kiln diff from inside the repository",
            )
        }
    };
    let first = absolute(&cwd, Path::new(&paths[0]));
    let repo = match git2::Repository::discover(existing_ancestor(&first)) {
        Ok(r) => r,
        Err(e) => {
            return usage(
                format!(
                    "{} is not inside a git repository: {}",
                    paths[0],
                    e.message()
                ),
                "kiln diff compares revisions of a local git repository: name paths inside one",
            )
        }
    };
    let Some(workdir) = repo.workdir().and_then(|w| std::fs::canonicalize(w).ok()) else {
        return usage(
            "the repository has no working tree (a bare repository)",
            "run kiln diff in a clone with a working tree",
        );
    };
    // Every path of the run, relative to the repository's top.
    let rel = |p: &str| -> Result<PathBuf, ExitCode> {
        repo_relative(&workdir, &absolute(&cwd, Path::new(p))).ok_or_else(|| {
            usage(
                format!("{p} is outside the repository at {}", workdir.display()),
                "every path kiln diff reads is read from each side's revision: name paths inside the repository",
            )
        })
    };
    let mut named: Vec<PathBuf> = Vec::new();
    let mut map = |ps: &[String]| -> Result<Vec<PathBuf>, ExitCode> {
        let v: Vec<PathBuf> = ps.iter().map(|p| rel(p)).collect::<Result<_, _>>()?;
        named.extend(v.iter().cloned());
        Ok(v)
    };
    let (inputs, values, crds, instances) = match (|| {
        Ok::<_, ExitCode>((
            map(&paths)?,
            map(&kurel.values)?,
            map(&common.crds.iter().cloned().collect::<Vec<_>>())?,
            map(&kurel.instances.iter().cloned().collect::<Vec<_>>())?,
        ))
    })() {
        Ok(v) => v,
        Err(code) => return code,
    };

    // Observed state is live objects, not part of a revision: read once, as given (the user's
    // own paths), and the same for both sides.
    let observed: Vec<Input> = if strategy.observed.is_empty() {
        Vec::new()
    } else {
        let given: Vec<Input> = strategy
            .observed
            .iter()
            .map(|p| Input::from_arg(p))
            .collect();
        let loaded = kiln_core::source::load_inputs_with_files(&given, &common.limits().yaml);
        if loaded.diagnostics.has_errors() {
            report::print(&loaded.diagnostics.0, &loaded.files, common.diagnostics);
            return ExitCode::from(SIDE_FAILED);
        }
        loaded
            .files
            .iter()
            .map(|f| Input::Text {
                name: f.name.clone(),
                text: f.text.clone(),
            })
            .collect()
    };

    // The two sides.
    let head_src = match &args.head {
        None => Source::WorkTree,
        Some(spec) => match resolve(&repo, spec) {
            Ok(s) => s,
            Err(code) => return code,
        },
    };
    let base_src = match (&args.base, &args.base_env) {
        (Some(spec), _) => match resolve(&repo, spec) {
            Ok(s) => s,
            Err(code) => return code,
        },
        (None, Some(_)) => match &head_src {
            Source::WorkTree => Source::WorkTree,
            Source::Commit { spec, oid } => Source::Commit {
                spec: spec.clone(),
                oid: *oid,
            },
        },
        (None, None) => match resolve(&repo, "HEAD") {
            Ok(s) => s,
            Err(code) => return code,
        },
    };
    let base_env = args.base_env.clone().or_else(|| args.env.clone());
    let head_env = args.env.clone();
    let base_label = label(&repo, &base_src, base_env.as_deref());
    let head_label = label(&repo, &head_src, head_env.as_deref());

    let request = |env: Option<String>| {
        let mut req = crate::request(
            &[],
            env.as_deref(),
            &args.pass_through,
            args.allow_empty,
            strategy,
            kurel,
            common,
        );
        req.inputs = inputs.iter().cloned().map(Input::Path).collect();
        req.values = values.clone();
        req.crds = crds.clone();
        req.instances = instances.first().cloned();
        req.observed = observed.clone();
        req
    };
    let mut base_req = request(base_env);
    let mut head_req = request(head_env);
    // An input that exists on one side only (an application added or removed by the change) is
    // read on that side; the other side has none of its objects. One missing on both sides is
    // left in, to fail as a path that does not exist.
    let exists = |src: &Source, rel: &Path| -> bool {
        match src {
            Source::WorkTree => std::fs::symlink_metadata(workdir.join(rel)).is_ok(),
            Source::Commit { oid, .. } => {
                rel.as_os_str().is_empty()
                    || repo
                        .find_commit(*oid)
                        .and_then(|c| c.tree())
                        .is_ok_and(|t| t.get_path(rel).is_ok())
            }
        }
    };
    let (on_base, on_head): (Vec<bool>, Vec<bool>) = inputs
        .iter()
        .map(|p| (exists(&base_src, p), exists(&head_src, p)))
        .unzip();
    for (req, here, there) in [
        (&mut base_req, &on_base, &on_head),
        (&mut head_req, &on_head, &on_base),
    ] {
        let keep: Vec<Input> = inputs
            .iter()
            .zip(here.iter().zip(there.iter()))
            .filter(|(_, (h, t))| **h || !**t)
            .map(|(p, _)| Input::Path(p.clone()))
            .collect();
        if keep.is_empty() {
            req.allow_empty = true;
        }
        req.inputs = keep;
    }

    let limits = kiln_core::revision::Limits::of(&common.limits());
    let snapshot = |src: &Source| -> Result<Option<Snapshot>, Diagnostic> {
        match src {
            Source::WorkTree => Ok(None),
            Source::Commit { spec, oid } => snapshot(&repo, *oid, &named, &limits)
                .map(Some)
                .map_err(|d| Diagnostic {
                    message: d.message.replacen(
                        "cannot read the revision",
                        &format!("cannot read the revision {spec}"),
                        1,
                    ),
                    ..d
                }),
        }
    };
    let (base_snap, head_snap) = match (snapshot(&base_src), snapshot(&head_src)) {
        (Ok(b), Ok(h)) => (b, h),
        (Err(d), _) | (_, Err(d)) => {
            report::print(&[d], &[], common.diagnostics);
            return ExitCode::from(SIDE_FAILED);
        }
    };
    let worktree = match Root::named(&workdir, PathBuf::new()) {
        Ok(r) => r,
        Err(d) => {
            report::print(&[d], &[], common.diagnostics);
            return ExitCode::from(SIDE_FAILED);
        }
    };
    // Each unit's objects become comparison entries on the worker that rendered them; only what
    // redaction needs of the objects is kept (Secrets, or all with --secret paths). The kro
    // instances the head takes from the base unchanged are counted, never compared: they are
    // the same objects on both sides (docs/diff.md, Speed).
    let finish = |objs: Vec<Value>| -> Result<Unit, Diagnostic> {
        Ok(Unit {
            entries: objs.iter().map(kiln_core::diff::Entry::of).collect(),
            shared: 0,
            kept: crate::for_redaction(objs, common),
        })
    };
    let shared = |objs: Vec<Value>| -> Result<Unit, Diagnostic> {
        let n = objs.len();
        Ok(Unit {
            entries: Vec::new(),
            shared: n,
            kept: crate::for_redaction(objs, common),
        })
    };
    // Where each side's files are: a revision, or the working tree (every path relative to the
    // repository's top, none outside it).
    let files = |snap: Option<Snapshot>| match snap {
        None => request::Files::Tree(worktree.clone()),
        Some(s) => request::Files::Revision(std::sync::Arc::new(s)),
    };
    base_req.files = files(base_snap);
    head_req.files = files(head_snap);
    // The kro instances that are the same on both sides render once (docs/diff.md, Speed).
    let pair = request::render_pair(&base_req, &head_req, finish, Some(&shared), true);
    let base = named_for(pair.base, &base_src);
    let head = named_for(pair.head, &head_src);
    // A base that does not render while the head does (the change that fixes a broken base):
    // the diff is against an empty base, and says so (docs/diff.md, "A base that does not
    // render"). A head that does not render is an error: there is nothing to show.
    let mut base_failed: Option<Vec<Diagnostic>> = None;
    let (base, head) = match (base, head) {
        (Ok(b), Ok(h)) => (b, h),
        (Err(f), Ok(h)) => {
            let header = if args.fail_on_base_error {
                format!("error: {base_label} does not render:")
            } else {
                format!(
                    "warning: {base_label} does not render: the diff is against an empty base \
                     (every object of {head_label} is added):"
                )
            };
            side_failed(&header, &f, common.diagnostics);
            base_failed = Some(f.diagnostics);
            let empty = Rendered {
                units: Vec::new(),
                origins: Vec::new(),
                warnings: Vec::new(),
                files: f.files,
                log: Vec::new(),
                details: Vec::new(),
                documents: 0,
                packages: Vec::new(),
                extra_documents: f.extra_documents,
            };
            (empty, h)
        }
        (b, h) => {
            let mut usage_only = true;
            for (side, r) in [(&base_label, b), (&head_label, h)] {
                if let Err(f) = r {
                    usage_only &= f
                        .diagnostics
                        .iter()
                        .filter(|d| d.is_error())
                        .all(|d| d.code == codes::REQUEST_INVALID);
                    side_failed(
                        &format!("error: {side} does not render:"),
                        &f,
                        common.diagnostics,
                    );
                }
            }
            return ExitCode::from(if usage_only { 2 } else { SIDE_FAILED });
        }
    };
    for d in base.extra_documents.iter().chain(&head.extra_documents) {
        report::note_document(d.clone());
    }
    let base_objects = kept(&base.units);
    let head_objects = kept(&head.units);
    // Warnings of each side, said which. With --strict the head's fail the run; the base's fail
    // it only with --fail-on-base-error, as the base's errors do (after the diff is written).
    let mut strict_failed = false;
    let mut base_strict = false;
    for (side, r, objs, is_head) in [
        (&base_label, &base, &base_objects, false),
        (&head_label, &head, &head_objects, true),
    ] {
        if r.warnings.is_empty() {
            continue;
        }
        if common.diagnostics == DiagFormat::Human {
            eprintln!("warning: {side}:");
        }
        report::note_rendered(objs);
        report::print(&r.warnings, &r.files, common.diagnostics);
        if is_head {
            strict_failed = common.strict;
        } else {
            base_strict = common.strict;
        }
    }
    if strict_failed {
        return ExitCode::from(SIDE_FAILED);
    }

    // Every secret either side knows of: Secret objects, what Secret templates read, --secret.
    let files: Vec<Arc<SourceFile>> = base.files.iter().chain(&head.files).cloned().collect();
    let extra: Vec<Value> = base
        .extra_documents
        .iter()
        .chain(&head.extra_documents)
        .cloned()
        .collect();
    let mut secrets = kiln_core::request::collect_secrets(&files, &extra, &common.secret);
    secrets.add_objects(&base_objects, &common.secret);
    secrets.add_objects(&head_objects, &common.secret);
    // What a render tells people (a kustomization it did not apply, a kurel patch enabled on its
    // own), said as `kiln render` says it: the head's lines, then those only the base has.
    let mut log = head.log.clone();
    log.extend(base.log.iter().filter(|l| !head.log.contains(l)).cloned());
    if !log.is_empty() {
        report::note_rendered(&base_objects);
        kurel_cmd::log(&log, &head.details, &head_objects, &files, kurel, common);
    }
    let options = kiln_core::diff::Options {
        context: args.context,
    };
    let mut diff =
        match kiln_core::diff::compare_units(&base.units, &head.units, &secrets, &options) {
            Ok(d) => d,
            Err(d) => {
                report::print(&[d], &files, common.diagnostics);
                return ExitCode::from(SIDE_FAILED);
            }
        };
    diff.base = base_label;
    diff.head = head_label;
    diff.base_failure = base_failed
        .as_deref()
        .map(|ds| kiln_core::diff::BaseFailure::of(ds, &secrets));
    let text = match args.format {
        DiffFormat::Text => {
            let color = match args.color {
                ColorArg::Always => true,
                ColorArg::Never => false,
                ColorArg::Auto => {
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none()
                }
            };
            diff.text(color)
        }
        DiffFormat::Markdown => diff.markdown(args.markdown_limit),
        DiffFormat::Json => {
            let mut t = serde_json::to_string_pretty(&diff.json()).expect("a diff serialises");
            t.push('\n');
            t
        }
    };
    let code = crate::emit(&text);
    if code != ExitCode::SUCCESS {
        return code;
    }
    if args.fail_on_base_error && (diff.base_failure.is_some() || base_strict) {
        ExitCode::from(SIDE_FAILED)
    } else if args.exit_code && diff.summary().has_differences() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The objects the units of a side kept for redaction.
fn kept(units: &[Unit]) -> Vec<Value> {
    units.iter().flat_map(|u| u.kept.iter().cloned()).collect()
}

/// Print the diagnostics of a side that did not render under `header` (which names the side).
fn side_failed(header: &str, f: &Failed, format: DiagFormat) {
    for d in &f.extra_documents {
        report::note_document(d.clone());
    }
    if format == DiagFormat::Human {
        eprintln!("{header}");
    }
    report::print(&f.diagnostics, &f.files, format);
}

/// A committed side's files are called `REV:path` (git's own notation) in its diagnostics, so
/// every message says which side it is about.
fn named_for(r: Result<Rendered<Unit>, Failed>, src: &Source) -> Result<Rendered<Unit>, Failed> {
    let Source::Commit { spec, .. } = src else {
        return r;
    };
    let name = |n: &str| format!("{spec}:{n}");
    let files = |fs: Vec<Arc<SourceFile>>| -> Vec<Arc<SourceFile>> {
        fs.into_iter()
            .map(|f| {
                Arc::new(SourceFile {
                    name: name(&f.name),
                    text: f.text.clone(),
                })
            })
            .collect()
    };
    let diag = |mut d: Diagnostic| {
        d.file = d.file.map(|f| name(&f));
        d
    };
    match r {
        Ok(mut r) => {
            r.files = files(std::mem::take(&mut r.files));
            r.warnings = std::mem::take(&mut r.warnings)
                .into_iter()
                .map(diag)
                .collect();
            Ok(r)
        }
        Err(mut f) => {
            f.files = files(std::mem::take(&mut f.files));
            f.diagnostics = std::mem::take(&mut f.diagnostics)
                .into_iter()
                .map(diag)
                .collect();
            Err(f)
        }
    }
}

/// What the output calls a side.
fn label(repo: &git2::Repository, src: &Source, env: Option<&str>) -> String {
    let mut s = match src {
        Source::WorkTree => "working tree".to_string(),
        Source::Commit { spec, oid } => {
            let short = repo
                .find_object(*oid, None)
                .ok()
                .and_then(|o| o.short_id().ok())
                .and_then(|b| b.as_str().map(str::to_string))
                .unwrap_or_else(|| oid.to_string()[..7].to_string());
            format!("{spec} ({short})")
        }
    };
    if let Some(env) = env {
        s.push_str(&format!(", environment {env}"));
    }
    s
}

/// A revision as git reads it; `A...B` is the merge base of A and B.
fn resolve(repo: &git2::Repository, spec: &str) -> Result<Source, ExitCode> {
    let unknown = |e: git2::Error| {
        usage(
            format!(
                "unknown revision {}: {}",
                kiln_core::diag::quote(spec),
                e.message().replace(spec, &kiln_core::diag::bounded(spec))
            ),
            "name a branch, a tag, a commit or an expression git accepts (`git rev-parse REV` checks it)",
        )
    };
    let rs = repo.revparse(spec).map_err(unknown)?;
    let commit = if rs.mode().contains(git2::RevparseMode::MERGE_BASE) {
        let (Some(a), Some(b)) = (rs.from(), rs.to()) else {
            return Err(usage(
                format!("{spec}: a merge base needs two revisions"),
                "write A...B",
            ));
        };
        let a = a.peel_to_commit().map_err(unknown)?.id();
        let b = b.peel_to_commit().map_err(unknown)?.id();
        repo.merge_base(a, b).map_err(unknown)?
    } else if rs.mode().contains(git2::RevparseMode::RANGE) {
        return Err(usage(
            format!("{spec} is a range of commits, not one revision"),
            "give the two sides as --base A --head B, or A...B for their merge base",
        ));
    } else {
        let Some(o) = rs.from() else {
            return Err(usage(
                format!("{spec} names no revision"),
                "name one revision",
            ));
        };
        o.peel_to_commit().map_err(unknown)?.id()
    };
    Ok(Source::Commit {
        spec: spec.to_string(),
        oid: commit,
    })
}

/// `p` made absolute against `cwd`, `.` and `..` resolved lexically.
fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in cwd.join(p).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The nearest directory of `p` that exists (a path deleted in the working tree may still be
/// in a revision).
fn existing_ancestor(p: &Path) -> PathBuf {
    let mut cur = p.to_path_buf();
    while !cur.is_dir() {
        if !cur.pop() {
            return PathBuf::from("/");
        }
    }
    cur
}

/// `p` relative to the repository's top: its real path when it exists (symlinks resolved), else
/// its nearest existing ancestor's real path and the rest.
fn repo_relative(workdir: &Path, p: &Path) -> Option<PathBuf> {
    let mut existing = p.to_path_buf();
    let mut rest = Vec::new();
    let real = loop {
        if let Ok(r) = std::fs::canonicalize(&existing) {
            break r;
        }
        rest.push(existing.file_name()?.to_os_string());
        if !existing.pop() {
            return None;
        }
    };
    let mut rel = real.strip_prefix(workdir).ok()?.to_path_buf();
    for r in rest.into_iter().rev() {
        rel.push(r);
    }
    // The repository's own database is not an input.
    if rel.components().next() == Some(Component::Normal(".git".as_ref())) {
        return None;
    }
    Some(rel)
}

/// The files of a commit that a render of the named paths reads (`kiln_core::revision`: the
/// named paths, the local extensions beside them, what symlinks there point to), read from the
/// repository's objects within the `tree-entries` and `tree-bytes` limits.
fn snapshot(
    repo: &git2::Repository,
    oid: git2::Oid,
    named: &[PathBuf],
    limits: &kiln_core::revision::Limits,
) -> Result<Snapshot, Diagnostic> {
    // Objects are read as git reads them (`git show`, `git checkout`): without hashing each one
    // again to check it against its id, which is `git fsck`'s job. libgit2 does so by default,
    // a quarter of the cost of reading ten thousand small blobs.
    git2::opts::strict_hash_verification(false);
    let unreadable = |e: git2::Error| {
        Diagnostic::error(
            codes::GIT_REVISION,
            format!("cannot read the revision: {}", e.message()),
        )
    };
    let tree = repo
        .find_commit(oid)
        .and_then(|c| c.tree())
        .map_err(unreadable)?
        .id();
    let objects = GitObjects {
        git_dir: repo.path().to_path_buf(),
    };
    kiln_core::revision::read(&objects, tree, named, limits)
}

/// The repository's objects for `kiln_core::revision`. The blobs are read on every core, each
/// thread with its own handle on the repository (a handle is not shared between threads): ten
/// thousand small files inflated one after the other were a tenth of a diff's wall time.
struct GitObjects {
    git_dir: PathBuf,
}

thread_local! {
    /// This thread's handle on the repository, and the directory it is of.
    static REPOSITORY: std::cell::RefCell<Option<(PathBuf, git2::Repository)>> =
        const { std::cell::RefCell::new(None) };
}

impl GitObjects {
    fn with<T>(
        &self,
        f: impl FnOnce(&git2::Repository) -> Result<T, git2::Error>,
    ) -> Result<T, String> {
        REPOSITORY.with(|cell| {
            let mut cell = cell.borrow_mut();
            if cell.as_ref().is_none_or(|(dir, _)| *dir != self.git_dir) {
                let repo =
                    git2::Repository::open(&self.git_dir).map_err(|e| e.message().to_string())?;
                *cell = Some((self.git_dir.clone(), repo));
            }
            let (_, repo) = cell.as_ref().expect("opened above");
            f(repo).map_err(|e| e.message().to_string())
        })
    }
}

/// A tree entry as `kiln_core::revision` reads it.
fn entry_of(e: &git2::TreeEntry<'_>) -> kiln_core::revision::Entry<git2::Oid> {
    use kiln_core::revision::Kind;
    let kind = match e.kind() {
        Some(git2::ObjectType::Tree) => Kind::Tree,
        Some(git2::ObjectType::Commit) => Kind::Submodule,
        _ if e.filemode() == 0o120000 => Kind::Symlink,
        _ => Kind::File,
    };
    kiln_core::revision::Entry {
        name: e.name_bytes().to_vec(),
        kind,
        id: e.id(),
    }
}

impl kiln_core::revision::Objects for GitObjects {
    type Id = git2::Oid;

    fn entry(
        &self,
        tree: git2::Oid,
        name: &[u8],
    ) -> Result<Option<kiln_core::revision::Entry<git2::Oid>>, String> {
        self.with(|repo| {
            Ok(repo
                .find_tree(tree)?
                .get_name_bytes(name)
                .map(|e| entry_of(&e)))
        })
    }

    fn entries(
        &self,
        tree: git2::Oid,
        max: usize,
    ) -> Result<Option<Vec<kiln_core::revision::Entry<git2::Oid>>>, String> {
        self.with(|repo| {
            let tree = repo.find_tree(tree)?;
            if tree.len() > max {
                return Ok(None);
            }
            Ok(Some(tree.iter().map(|e| entry_of(&e)).collect()))
        })
    }

    fn size(&self, blob: git2::Oid) -> Result<u64, String> {
        self.with(|repo| Ok(repo.odb()?.read_header(blob)?.0 as u64))
    }

    fn read(&self, blob: git2::Oid) -> Result<Vec<u8>, String> {
        self.with(|repo| Ok(repo.find_blob(blob)?.content().to_vec()))
    }
}
