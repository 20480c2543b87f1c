//! `kiln-cmp generate`: the application directory rendered to a stream of Kubernetes objects.
//!
//! Argo CD runs the command in `<checkout>/<ARGOCD_APP_SOURCE_PATH>` inside a full copy of the
//! repository, so the repository root is the working directory with the source path taken off.
//! That root is the trust boundary: the application's files, and any values file a parameter
//! names, may not leave it (`Request.files`, `Files::Within`).

use std::path::{Component, Path, PathBuf};

use kiln_core::diag::{codes, Diagnostic};
use kiln_core::request::{self, Request};
use kiln_core::source::Input;
use kiln_core::vocabulary::Vocabulary;

use crate::env::Env;
use crate::options::Options;
use kiln_core::diag::quote;

/// Where the run happens: the repository root, and the application's path inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The repository checkout: nothing outside it is read.
    pub root: PathBuf,
    /// The application directory, relative to the root (`.` for the root itself).
    pub app: PathBuf,
}

/// The repository root and application path for working directory `cwd`.
pub fn place(cwd: &Path, source_path: Option<&str>) -> Result<Place, Diagnostic> {
    let rel = match source_path
        .map(str::trim)
        .filter(|s| !s.is_empty() && *s != ".")
    {
        None => PathBuf::from("."),
        Some(s) => match normalise(Path::new(".").join(s.trim_start_matches('/'))) {
            Some(p) => p,
            None => {
                return Err(Diagnostic::error(
                    codes::PATH_ESCAPE,
                    format!("ARGOCD_APP_SOURCE_PATH {} leaves the repository", quote(s)),
                )
                .in_file("ARGOCD_APP_SOURCE_PATH")
                .with_hint("the application's source.path is a directory of the repository"))
            }
        },
    };
    // cwd = root/rel: take as many trailing components off cwd as rel has.
    let depth = rel
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    let mut root = cwd.to_path_buf();
    for _ in 0..depth {
        if !root.pop() {
            return Err(Diagnostic::error(
                codes::REQUEST_INVALID,
                format!(
                    "the working directory {} is not the application path {} of a checkout",
                    cwd.display(),
                    rel.display()
                ),
            )
            .in_file("ARGOCD_APP_SOURCE_PATH")
            .with_hint("Argo CD runs plugins in <checkout>/<source.path>"));
        }
    }
    if depth > 0 && !cwd.ends_with(&rel) {
        return Err(Diagnostic::error(
            codes::REQUEST_INVALID,
            format!(
                "the working directory {} does not end with the application path {}",
                cwd.display(),
                rel.display()
            ),
        )
        .in_file("ARGOCD_APP_SOURCE_PATH")
        .with_hint("Argo CD runs plugins in <checkout>/<source.path>; run kiln-cmp there"));
    }
    Ok(Place { root, app: rel })
}

/// `a/./b/../c` → `a/c`, relative; `None` when it climbs above its start or is absolute.
pub fn normalise(p: PathBuf) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::Normal(n) => out.push(n),
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(if out.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        out
    })
}

/// Groups `KUBE_API_VERSIONS` names that are not built into Kubernetes: the cluster serves them,
/// so documents of their kinds are meant to pass through.
pub fn cluster_groups(api_versions: &[String]) -> Vec<String> {
    let mut groups: Vec<String> = api_versions
        .iter()
        .filter_map(|gv| gv.rsplit_once('/').map(|(g, _)| g.to_string()))
        .filter(|g| !kiln_core::openapi::is_builtin_group(g))
        .collect();
    groups.sort();
    groups.dedup();
    groups
}

/// The core request of a run.
pub fn request(place: &Place, env: &Env, opts: &Options) -> Result<Request, Vec<Diagnostic>> {
    let mut errs = Vec::new();
    let mut values = Vec::new();
    let mut observed = Vec::new();
    for v in &opts.observed {
        // Like values files: relative to the application directory, inside the checkout.
        match normalise(place.app.join(v)).filter(|_| !Path::new(v).is_absolute()) {
            Some(p) => observed.push(Input::Path(p)),
            None => errs.push(
                Diagnostic::error(
                    codes::PATH_ESCAPE,
                    format!("observed state {} is outside the repository", quote(v)),
                )
                .in_file("ARGOCD_APP_PARAMETERS")
                .with_hint("observed paths are relative to the application directory, inside the repository"),
            ),
        }
    }
    for v in &opts.values {
        // Relative to the application directory, as Argo CD users write them; confined to the
        // checkout.
        match normalise(place.app.join(v)).filter(|_| !Path::new(v).is_absolute()) {
            Some(p) => values.push(p),
            None => errs.push(
                Diagnostic::error(
                    codes::PATH_ESCAPE,
                    format!("values file {} is outside the repository", quote(v)),
                )
                .in_file("ARGOCD_APP_PARAMETERS")
                .with_hint("values files are paths relative to the application directory, inside the repository"),
            ),
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let mut pass_through = cluster_groups(&env.kube_api_versions);
    pass_through.extend(opts.pass_through.iter().cloned());
    Ok(Request {
        inputs: vec![Input::Path(place.app.clone())],
        files: request::Files::Within(place.root.clone()),
        environment: opts.environment.clone(),
        values,
        sets: opts.sets.clone(),
        namespace: env.app_namespace.clone(),
        strict: opts.strict,
        pass_through,
        allow_empty: opts.allow_empty,
        mode: if opts.kro_mode {
            kiln_core::request::Mode::Kro
        } else {
            kiln_core::request::Mode::Direct
        },
        emit_crds: opts.emit_crds,
        sync_waves: opts.sync_waves,
        observed,
        no_provenance: opts.no_provenance,
        ..Request::default()
    })
}

/// The file names Argo CD takes for a kustomization (util/kustomize/kustomize.go,
/// `KustomizationNames`): kustomize's own, in its order.
pub const KUSTOMIZATION_NAMES: &[&str] = kiln_core::kustomize_paths::KUSTOMIZATION_FILES;

/// A kustomization below an application directory that has none at its top, one error each:
/// Argo CD builds a directory with kustomize only when the kustomization is at its top, and kiln
/// follows it; read as a manifest the kustomization would fail ("document has no apiVersion")
/// or, without an extension, be silently left out.
pub fn kustomizations(place: &Place) -> Vec<Diagnostic> {
    let Ok(root) = kiln_core::source::Root::named(&place.root, PathBuf::new()) else {
        return Vec::new();
    };
    // Problems listing the tree are the render's to report.
    let mut ignored = kiln_core::diag::Diagnostics::new();
    root.walk_all(&place.app, &mut ignored)
        .into_iter()
        .filter(|f| {
            f.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| KUSTOMIZATION_NAMES.contains(&n))
        })
        .map(|f| {
            Diagnostic::error(
                codes::REQUEST_INVALID,
                "a kustomization below the application directory is not built: only one at its top is",
            )
            .in_file(f.display().to_string())
            .with_hint("point the Application's source.path at the directory of the kustomization (kiln renders it in place and builds it), or add a kustomization.yaml at the top of the application directory that names it")
        })
        .collect()
}

/// What a run prints, and its exit code: stdout only Kubernetes objects; stderr concise, one
/// line per problem, no secret values; 0 success, 1 failure.
pub type Outcome = kiln_core::output::Outcome;

/// The most bytes of a diagnostic's message, hint or file shown: Argo CD shows and caches
/// stderr, and a message may quote a user's value.
pub const MAX_SHOWN_BYTES: usize = 1024;

/// Concise lines for Argo CD's UI (which shows and caches stderr): each diagnostic in kiln-cmp's
/// words ([`vocabulary`]) and bounded ([`MAX_SHOWN_BYTES`]).
pub fn report(ds: &[Diagnostic]) -> String {
    let words = vocabulary();
    let mut s = String::new();
    for d in ds {
        let mut d = words.speak(d.clone());
        d.message = bounded(d.message);
        d.hint = d.hint.map(bounded);
        d.file = d.file.map(bounded);
        s.push_str(&d.to_string());
        s.push('\n');
    }
    s
}

fn bounded(mut s: String) -> String {
    if s.len() > MAX_SHOWN_BYTES {
        let mut cut = MAX_SHOWN_BYTES;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        let more = s.len() - cut;
        s.truncate(cut);
        s.push_str(&format!("… ({more} more bytes)"));
    }
    s
}

/// What a kiln-cmp user writes for each `kiln` flag a core hint names: the parameter and plugin
/// env of [`crate::options::OPTIONS`], and what stands for the flags kiln-cmp has no option for.
pub fn vocabulary() -> Vocabulary {
    let options = crate::options::OPTIONS.iter().map(|o| {
        let word = match o.env {
            Some(env) => format!("the parameter {} (or plugin env {env})", o.param),
            None => format!("the parameter {}", o.param),
        };
        (o.flag, word)
    });
    Vocabulary::new(options.chain([
        (
            "--namespace",
            "the Application's destination namespace".to_string(),
        ),
        ("--crds", "the application directory".to_string()),
        (
            "--limit",
            "a higher {} (kiln-cmp's limits are fixed: render less per application)".to_string(),
        ),
    ]))
}

/// `text` with the path `path` (a whole path, or the start of one: followed by `/` or by a
/// character that cannot continue a file name) replaced by `with`, or, for `with` empty, left
/// out with its slash (`.` when it stands alone).
fn replace_path(text: &str, path: &str, with: &str) -> String {
    if path.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(path) {
        let after = &rest[at + path.len()..];
        let next = after.chars().next();
        let whole = next.is_none_or(|c| !(c.is_alphanumeric() || "-_.~".contains(c)));
        out.push_str(&rest[..at]);
        if !whole {
            out.push_str(path);
        } else if next == Some('/') && with.is_empty() {
            rest = &after[1..];
            continue;
        } else if with.is_empty() && next != Some('/') {
            out.push('.');
        } else {
            out.push_str(with);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Paths named relative to the repository: the checkout is a fresh temporary directory on every
/// call, and Argo CD shows (and caches) the message. The checkout's own path becomes `.`, a
/// path inside it relative, and one beside it (a symlink's target that leaves it) `../…`: no
/// temporary path is ever shown.
fn in_repository(ds: Vec<Diagnostic>, root: &Path) -> Vec<Diagnostic> {
    let mut roots = vec![root.to_path_buf()];
    if let Ok(c) = std::fs::canonicalize(root) {
        if c != root {
            roots.push(c);
        }
    }
    let scrub = |t: String| -> String {
        let mut t = t;
        for r in &roots {
            t = replace_path(&t, &r.display().to_string(), "");
        }
        for r in &roots {
            if let Some(parent) = r.parent().filter(|p| p.parent().is_some()) {
                t = replace_path(&t, &parent.display().to_string(), "..");
            }
        }
        t
    };
    ds.into_iter()
        .map(|mut d| {
            d.message = scrub(std::mem::take(&mut d.message));
            d.hint = d.hint.map(scrub);
            d.file = d.file.map(scrub);
            d
        })
        .collect()
}

fn failed(ds: &[Diagnostic]) -> Outcome {
    Outcome {
        stderr: report(ds),
        code: 1,
        ..Outcome::default()
    }
}

/// Render the application in `cwd` with the environment `env`.
pub fn generate(cwd: &Path, env: &Env) -> Outcome {
    let opts = match crate::options::from_env(env) {
        Ok(o) => o,
        Err(ds) => return failed(&ds),
    };
    let place = match place(cwd, env.source_path.as_deref()) {
        Ok(p) => p,
        Err(d) => return failed(&[d]),
    };
    if crate::kustomize::top_kustomization(&place).is_some() {
        return generate_kustomized(&place, env, &opts);
    }
    let kustomizations = kustomizations(&place);
    if !kustomizations.is_empty() {
        return failed(&kustomizations);
    }
    let req = match request(&place, env, &opts) {
        Ok(r) => r,
        Err(ds) => return failed(&ds),
    };
    // Each unit is serialised on the worker that rendered it: serialising and freeing every
    // object on the main thread afterwards was the serial tail of a refresh.
    let mut rendered = match request::render_units(&req, |objs| {
        let yaml = kiln_core::output::yaml_stream(&objs)?;
        let kept = kiln_core::redact::kept_for_redaction(&yaml, objs);
        Ok((yaml, kept))
    }) {
        Ok(r) => r,
        Err(f) => return failed(&in_repository(f.redacted(&[]), &place.root)),
    };
    let (streams, kept): (Vec<String>, Vec<Vec<serde_json::Value>>) =
        std::mem::take(&mut rendered.units).into_iter().unzip();
    let kept: Vec<serde_json::Value> = kept.into_iter().flatten().collect();
    let warnings = rendered.redacted_warnings(&[], &kept);
    let stdout = kiln_core::output::join_yaml(&streams);
    kiln_core::process::discard((rendered, streams));
    finish(
        &place,
        env,
        &opts,
        Ok(stdout),
        in_repository(warnings, &place.root),
    )
}

/// The application directory has a kustomization: rendered in place and built by kustomize
/// ([`crate::kustomize`]).
fn generate_kustomized(place: &Place, env: &Env, opts: &Options) -> Outcome {
    match crate::kustomize::build(place, env, opts) {
        Ok(b) => finish(
            place,
            env,
            opts,
            kiln_core::output::yaml_stream(&b.objects),
            in_repository(b.warnings, &place.root),
        ),
        Err(f) => {
            let mut ds = in_repository(f.diagnostics, &place.root);
            if let Some(s) = &f.scratch {
                ds = in_repository(ds, s);
            }
            failed(&ds)
        }
    }
}

/// The objects (`yaml`, a stream) on stdout, warnings on stderr; an empty result is refused
/// unless allowed.
fn finish(
    place: &Place,
    env: &Env,
    opts: &Options,
    yaml: Result<String, Diagnostic>,
    warnings: Vec<Diagnostic>,
) -> Outcome {
    let yaml = match yaml {
        Ok(y) => y,
        Err(d) => return failed(&[d]),
    };
    if yaml.is_empty() && !opts.allow_empty {
        // With auto-prune, an empty stream deletes every resource of the application.
        return failed(&[Diagnostic::error(
            codes::REQUEST_INVALID,
            format!(
                "the application renders no objects{}",
                env.app_name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ),
        )
        .in_file(place.app.display().to_string())
        .with_hint("an empty manifest set makes Argo CD prune everything the application owns; set the parameter allowEmpty (or ALLOW_EMPTY) to true if that is intended")]);
    }
    let mut warnings = warnings;
    warnings.extend(
        env.kube_version
            .as_deref()
            .and_then(|v| kiln_core::request::cluster_version_warning(v, "KUBE_VERSION")),
    );
    Outcome {
        stdout: yaml,
        // Warnings go to stderr: Argo CD logs them, and they never fail the run unless strict.
        stderr: report(&warnings),
        code: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_working_directory_without_the_source_path() {
        let p = place(
            Path::new("/tmp/x/_cmp_server/u/apps/shop"),
            Some("apps/shop"),
        )
        .unwrap();
        assert_eq!(p.root, Path::new("/tmp/x/_cmp_server/u"));
        assert_eq!(p.app, Path::new("apps/shop"));
        let p = place(Path::new("/tmp/x"), None).unwrap();
        assert_eq!(
            (p.root.as_path(), p.app.as_path()),
            (Path::new("/tmp/x"), Path::new("."))
        );
        // The working directory must end with the source path, and the path may not climb:
        // either would put the checkout's root somewhere Argo CD did not.
        for (cwd, source) in [
            ("/tmp/x/apps/shop", "apps/blog"),
            ("/tmp/x/apps", "../apps"),
        ] {
            let e = place(Path::new(cwd), Some(source)).unwrap_err();
            assert!(
                [codes::PATH_ESCAPE, codes::REQUEST_INVALID].contains(&e.code),
                "{cwd} {source}: {e:?}"
            );
        }
    }

    #[test]
    fn values_stay_in_the_checkout() {
        let place = Place {
            root: "/r".into(),
            app: "apps/shop".into(),
        };
        let opts = |v: &str| Options {
            values: vec![v.into()],
            ..Options::default()
        };
        let r = request(&place, &Env::default(), &opts("../shared/prod.yaml")).unwrap();
        assert_eq!(r.values, [PathBuf::from("apps/shared/prod.yaml")]);
        for bad in ["../../../etc/passwd", "/etc/passwd"] {
            let e = request(&place, &Env::default(), &opts(bad)).unwrap_err();
            assert_eq!(e[0].code, codes::PATH_ESCAPE, "{bad}");
        }
    }

    #[test]
    fn checkout_paths_become_repository_paths() {
        let r = "/tmp/cmp/abc";
        assert_eq!(
            replace_path("read /tmp/cmp/abc/apps/x.yaml", r, ""),
            "read apps/x.yaml"
        );
        assert_eq!(replace_path("in /tmp/cmp/abc: no", r, ""), "in .: no");
        assert_eq!(
            replace_path("/tmp/cmp/abcdef/x", r, ""),
            "/tmp/cmp/abcdef/x"
        );
        assert_eq!(
            replace_path("to /tmp/cmp/other, out", "/tmp/cmp", ".."),
            "to ../other, out"
        );
        assert_eq!(
            replace_path("to /tmp/cmp, out", "/tmp/cmp", ".."),
            "to .., out"
        );
        assert_eq!(replace_path("/tmp/cmpx", "/tmp/cmp", ".."), "/tmp/cmpx");
    }

    /// Every flag a core hint or message names in a run kiln-cmp can make has a word here.
    #[test]
    fn the_vocabulary_has_a_word_for_every_flag_core_names() {
        let v = vocabulary();
        for flag in [
            "--env",
            "--values",
            "--set",
            "--strict",
            "--allow-empty",
            "--pass-through",
            "--mode",
            "--emit-crds",
            "--sync-waves",
            "--observed",
            "--no-provenance",
            "--namespace",
            "--crds",
            "--limit",
        ] {
            assert!(v.word(flag).is_some(), "{flag}");
        }
        assert_eq!(
            v.text("reduce the list, or raise the limit with --limit collection-size=N"),
            "reduce the list, or raise the limit with a higher collection-size=N (kiln-cmp's limits are fixed: render less per application)"
        );
    }

    #[test]
    fn cluster_groups_are_the_non_builtin_ones() {
        let g = cluster_groups(&[
            "v1".into(),
            "apps/v1".into(),
            "cert-manager.io/v1".into(),
            "cert-manager.io/v1beta1".into(),
        ]);
        assert_eq!(g, ["cert-manager.io"]);
    }
}
