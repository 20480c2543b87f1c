//! The instance's parameters: package defaults, then the local extension's `parameters.yaml`,
//! then `--values` files in order, then `--set` arguments, each deep-merged over the previous.
//!
//! Mappings merge key by key; anything else (scalars, lists) is replaced. An override may not
//! change what a parameter is: a string stays a string, a mapping a mapping (numbers may switch
//! between integer and float; a `null` default accepts anything). Package metadata (`kurel`) cannot
//! be overridden. Overriding a top-level key the package does not declare is a warning: it is
//! usually a typo, and no variable can reference it anyway unless a patch does.

use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::{Map, Value};

use crate::diag::{bounded, codes, quote, Diagnostic, Diagnostics};
use crate::document::{parse_source, Document, SourceFile, YamlLimits};
use crate::fieldpath::{FieldPath, Segment};
use crate::source::Root;

use super::variables::type_name;

/// The display name used for diagnostics about `--set` arguments.
pub const SET_FILE: &str = "<--set>";

/// Read `--values` files through `root` (the working directory): each must hold one mapping.
pub fn read_values_files(
    root: &Root,
    paths: &[String],
) -> (Vec<Document>, Vec<Arc<SourceFile>>, Diagnostics) {
    read_values_files_with_limits(root, paths, &YamlLimits::default())
}

/// [`read_values_files`] with reading limits.
pub fn read_values_files_with_limits(
    root: &Root,
    paths: &[String],
    limits: &YamlLimits,
) -> (Vec<Document>, Vec<Arc<SourceFile>>, Diagnostics) {
    gather(
        paths
            .iter()
            .map(|p| read_values_file(root, Path::new(p), limits)),
    )
}

/// One values file, its source (when it could be read) and its problems.
type ValuesFile = (Option<Document>, Option<Arc<SourceFile>>, Diagnostics);

fn gather(
    files: impl IntoIterator<Item = ValuesFile>,
) -> (Vec<Document>, Vec<Arc<SourceFile>>, Diagnostics) {
    let mut docs = Vec::new();
    let mut sources = Vec::new();
    let mut diags = Diagnostics::new();
    for (doc, source, ds) in files {
        docs.extend(doc);
        sources.extend(source);
        diags.extend(ds);
    }
    (docs, sources, diags)
}

/// Read one values file through `root`: it must hold one mapping (an empty file is an empty
/// mapping).
fn read_values_file(root: &Root, rel: &Path, limits: &YamlLimits) -> ValuesFile {
    let mut diags = Diagnostics::new();
    let text = match root.read_to_string(rel, limits.max_input_bytes) {
        Ok(t) => t,
        Err(d) => {
            diags.push(d.with_hint(
                "values files are read relative to the current directory and may not leave it",
            ));
            return (None, None, diags);
        }
    };
    let file = Arc::new(SourceFile {
        name: root.display_name(rel),
        text,
    });
    let (doc, ds) = parse_values_file(&file, limits);
    diags.extend(ds);
    (doc, Some(file), diags)
}

/// Parse a values file already read: it must hold one mapping (an empty file is an empty
/// mapping).
pub fn parse_values_file(
    file: &Arc<SourceFile>,
    limits: &YamlLimits,
) -> (Option<Document>, Diagnostics) {
    let mut diags = Diagnostics::new();
    let doc = match parse_source(file, limits) {
        Err(d) => {
            diags.push(d);
            None
        }
        Ok(mut ds) => match ds.len() {
            0 => Some(Document {
                source: file.clone(),
                index: 0,
                item: None,
                value: Value::Object(Map::new()),
            }),
            1 if ds[0].value.is_object() => Some(ds.remove(0)),
            _ => {
                diags.push(
                    Diagnostic::error(
                        codes::KUREL_VALUES,
                        format!("values file {} must hold one mapping", file.name),
                    )
                    .in_file(&file.name)
                    .with_hint("write parameter overrides as key: value pairs, in one document"),
                );
                None
            }
        },
    };
    (doc, diags)
}

/// Extensions of instance files in an `--instances` directory.
const INSTANCE_EXTENSIONS: &[&str] = &["yaml", "yml"];

/// The instances of `kiln render PKG --instances DIR`: every `*.yaml` / `*.yml` file directly
/// in `dir` (not in its subdirectories; hidden files skipped), sorted by name, each read as a
/// values file through `root` (the working directory), in parallel. A directory without
/// instance files is a warning: it renders nothing, which is what a GitOps repository whose
/// last instance was removed should get.
pub fn read_instances_dir(
    root: &Root,
    dir: &str,
    limits: &YamlLimits,
) -> (Vec<Document>, Vec<Arc<SourceFile>>, Diagnostics) {
    let mut diags = Diagnostics::new();
    let rel_dir = Path::new(dir);
    let display = root.display_name(rel_dir);
    let real = match root.resolve(rel_dir) {
        Ok(r) => r,
        Err(d) => {
            diags.push(d.with_hint(
                "--instances names a directory under the current directory, which it may not leave",
            ));
            return (Vec::new(), Vec::new(), diags);
        }
    };
    let entries = match std::fs::read_dir(&real) {
        Ok(e) => e,
        Err(e) => {
            diags.push(
                Diagnostic::error(
                    codes::KUREL_VALUES,
                    format!("--instances {display}: cannot list the directory: {e}"),
                )
                .in_file(&display)
                .with_hint("name a directory holding one values file (*.yaml) per instance"),
            );
            return (Vec::new(), Vec::new(), diags);
        }
    };
    // A directory named like a file is not an instance (the entry's type costs no system call;
    // a symlink is read, and refused by the root if it leaves it or is not a regular file).
    let mut names: Vec<_> = entries
        .filter_map(|e| e.ok())
        .filter(|e| !e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name())
        .collect();
    names.sort();
    let mut rels = Vec::new();
    for name in names {
        let rel = rel_dir.join(&name);
        let Some(s) = name.to_str() else {
            diags.push(
                Diagnostic::error(codes::NOT_UTF8, "file name is not valid UTF-8")
                    .in_file(root.display_name(&rel))
                    .with_hint("rename the file"),
            );
            continue;
        };
        let ext = Path::new(s).extension().and_then(|e| e.to_str());
        if s.starts_with('.') || !ext.is_some_and(|e| INSTANCE_EXTENSIONS.contains(&e)) {
            continue;
        }
        rels.push(rel);
    }
    if rels.is_empty() && !diags.has_errors() {
        diags.push(
            Diagnostic::warning(
                codes::KUREL_VALUES,
                format!("--instances {display} holds no instance files: nothing is rendered"),
            )
            .in_file(&display)
            .with_hint("write one values file (NAME.yaml) per instance directly in the directory"),
        );
    }
    let read: Vec<ValuesFile> = rels
        .par_iter()
        .map(|rel| read_values_file(root, rel, limits))
        .collect();
    let (docs, files, more) = gather(read);
    diags.extend(more);
    (docs, files, diags)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Number(_) => "number",
        other => type_name(other),
    }
}

/// Deep-merge `over` into `base`, reporting type and structure changes through `report`.
pub fn merge_checked(
    base: &mut Value,
    over: &Value,
    at: &FieldPath,
    report: &mut dyn FnMut(&FieldPath, Diagnostic),
) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                let p = at.key(k);
                match b.get_mut(k) {
                    Some(existing) => merge_checked(existing, v, &p, report),
                    None => {
                        if let Some(hint) = undeclared(b, k, at.is_empty()) {
                            let near = near_miss(b, k).map(str::to_string);
                            report(
                                &p,
                                crate::suggest::suggesting(
                                    Diagnostic::warning(
                                        codes::KUREL_UNKNOWN_PARAMETER,
                                        format!(
                                            "parameter {} is not declared in parameters.yaml",
                                            quote(&p.to_string())
                                        ),
                                    )
                                    .with_hint(hint),
                                    near.as_deref(),
                                ),
                            );
                        }
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b @ Value::Null, o) => *b = o.clone(),
        (b, o) => {
            if kind_of(b) == kind_of(o) {
                *b = o.clone();
            } else {
                report(
                    at,
                    Diagnostic::error(
                        codes::KUREL_OVERRIDE_TYPE,
                        format!(
                            "override changes {at} from {} to {}",
                            describe(b),
                            describe(o)
                        ),
                    )
                    .with_hint(format!(
                        "parameters.yaml declares {at} as {}; an override must keep its type and structure",
                        describe(b)
                    )),
                );
            }
        }
    }
}

/// The key of `map` that a new `key` is a near miss of.
fn near_miss<'m>(map: &'m Map<String, Value>, key: &str) -> Option<&'m str> {
    // One edit turns any short key into another (`a` → `b`): short keys are not near misses.
    (key.chars().count() >= 4)
        .then(|| crate::suggest::nearest(key, map.keys().map(String::as_str)))
        .flatten()
}

/// Whether a key an override adds to a map of the parameters is worth a warning, and its hint.
/// Every new top-level key is (only declared parameters can be referenced); deeper down, maps
/// are often open (labels, resources), so only a near miss of a key already there is (`replcias`
/// beside `replicas`).
fn undeclared(map: &Map<String, Value>, key: &str, top: bool) -> Option<String> {
    match near_miss(map, key) {
        Some(near) => Some(crate::suggest::did_you_mean(near)),
        None if top => {
            Some("check the spelling; only declared parameters can be referenced".to_string())
        }
        None => None,
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Object(_) => "a map".into(),
        Value::Array(_) => "a list".into(),
        Value::Null => "null".into(),
        Value::String(s) => format!("{} ({})", kind_of(v), quote(s)),
        other => format!("{} ({})", kind_of(other), other),
    }
}

/// Merge a parameters document (local extension or values file) into `params`.
pub fn merge_document(params: &mut Value, doc: &Document, diags: &mut Diagnostics) {
    if doc.value.get("kurel").is_some() {
        diags.push(
            doc.diag(
                Diagnostic::error(
                    codes::KUREL_VALUES,
                    "kurel holds the package metadata and cannot be overridden",
                )
                .with_hint("remove kurel: from the overrides"),
                &FieldPath::root().key("kurel"),
            ),
        );
    }
    let mut over = doc.value.clone();
    if let Value::Object(m) = &mut over {
        m.shift_remove("kurel");
    }
    merge_checked(params, &over, &FieldPath::root(), &mut |p, d| {
        diags.push(doc.diag(d, p));
    });
}

/// KLN1005 for each `--set` whose path has more segments than `max_depth` (the `yaml-depth`
/// limit): the nesting it would build is deeper than any document kiln reads
/// ([`crate::fieldpath::too_deep`]). A door checks this before anything reads the sets.
pub fn too_deep_sets(sets: &[String], max_depth: usize) -> Vec<Diagnostic> {
    sets.iter()
        .enumerate()
        .filter_map(|(i, s)| {
            let path = s.split_once('=').map_or(s.as_str(), |(p, _)| p).trim();
            let segments = FieldPath::parse(path).map_or(0, |p| p.0.len());
            set_too_deep(i, path, segments, max_depth)
        })
        .collect()
}

fn set_too_deep(i: usize, path: &str, segments: usize, max: usize) -> Option<Diagnostic> {
    let what = format!("--set {}", crate::diag::quote(path));
    crate::fieldpath::too_deep(&what, segments, max)
        .map(|d| d.in_file(SET_FILE).at(format!("[{i}]")))
}

/// Apply `--set path=value` arguments. The path is a parameter path (`app.replicas`,
/// `hosts[0]`, `labels["a.b/c"]`); the value is read as YAML, except that a string parameter takes
/// the text as written (so `--set image.tag=1.10` stays `"1.10"`).
pub fn apply_sets(params: &mut Value, sets: &[String], diags: &mut Diagnostics) {
    for (i, s) in sets.iter().enumerate() {
        let err = |msg: String, hint: &str| {
            Diagnostic::error(codes::KUREL_VALUES, msg)
                .in_file(SET_FILE)
                .at(format!("[{i}]"))
                .with_hint(hint)
        };
        let Some((path, text)) = s.split_once('=') else {
            diags.push(err(
                format!("--set {} is not path=value", quote(s)),
                "write --set app.replicas=3",
            ));
            continue;
        };
        let Some(fp) = FieldPath::parse(path.trim()).filter(|p| !p.is_empty()) else {
            diags.push(err(
                format!(
                    "--set {}: {} is not a parameter path",
                    quote(s),
                    quote(path)
                ),
                "write dotted keys with [i] indexes, and [\"a.b\"] for keys with dots",
            ));
            continue;
        };
        // The run checked the sets against its limit before (`too_deep_sets`); the highest
        // limit accepted still bounds what is built here.
        let max = usize::try_from(crate::limits::Limit::YamlDepth.max()).unwrap_or(usize::MAX);
        if let Some(d) = set_too_deep(i, path.trim(), fp.0.len(), max) {
            diags.push(d);
            continue;
        }
        if matches!(fp.0.first(), Some(Segment::Key(k)) if k == "kurel") {
            diags.push(err(
                format!(
                    "--set {}: kurel holds the package metadata and cannot be overridden",
                    quote(s)
                ),
                "set another parameter",
            ));
            continue;
        }
        // The current value decides how the text is read.
        let current = get(params, &fp);
        let value = match current {
            Some(Value::String(_)) => Value::String(text.to_string()),
            _ => match crate::document::parse_file(
                SET_FILE,
                text.to_string(),
                &YamlLimits::default(),
            ) {
                Ok(docs) => docs
                    .into_iter()
                    .next()
                    .map(|d| d.value)
                    .unwrap_or(Value::String(String::new())),
                Err(_) => Value::String(text.to_string()),
            },
        };
        // Build {a: {b: value}} along keys; indexes must exist.
        match set_at(params, &fp.0, value) {
            Ok(()) => {}
            Err(SetError::Type(at, msg)) => diags.push(
                Diagnostic::error(
                    codes::KUREL_OVERRIDE_TYPE,
                    format!("--set {}: {msg}", quote(s)),
                )
                .in_file(SET_FILE)
                .at(at)
                .with_hint("an override must keep the parameter's type and structure"),
            ),
            Err(SetError::Path(msg)) => diags.push(err(
                format!("--set {}: {msg}", quote(s)),
                "check the parameter path",
            )),
            Err(SetError::Unknown(k, hint)) => diags.push(
                Diagnostic::warning(
                    codes::KUREL_UNKNOWN_PARAMETER,
                    format!(
                        "--set {}: parameter {} is not declared in parameters.yaml",
                        quote(s),
                        quote(&k)
                    ),
                )
                .in_file(SET_FILE)
                .with_hint(hint),
            ),
        }
    }
}

fn get<'a>(v: &'a Value, p: &FieldPath) -> Option<&'a Value> {
    p.0.iter().try_fold(v, |v, s| match s {
        Segment::Key(k) => v.as_object()?.get(k),
        Segment::Index(i) => v.as_array()?.get(*i),
    })
}

enum SetError {
    Type(String, String),
    Path(String),
    /// An undeclared parameter (its path) and the hint.
    Unknown(String, String),
}

fn set_at(params: &mut Value, segs: &[Segment], value: Value) -> Result<(), SetError> {
    let mut cur = params;
    let mut walked = FieldPath::root();
    let mut unknown = None;
    for (i, seg) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        match seg {
            Segment::Key(k) => {
                if cur.is_null() {
                    *cur = Value::Object(Map::new());
                }
                let Value::Object(m) = cur else {
                    return Err(SetError::Type(
                        walked.to_string(),
                        format!("{walked} is {}, not a map", describe(cur)),
                    ));
                };
                if !m.contains_key(k) {
                    if unknown.is_none() {
                        if let Some(hint) = undeclared(m, k, i == 0) {
                            unknown = Some((walked.key(k).to_string(), hint));
                        }
                    }
                    m.insert(
                        k.clone(),
                        if last {
                            Value::Null
                        } else {
                            Value::Object(Map::new())
                        },
                    );
                }
                // Extended in place: a copy per segment was quadratic in the path's length.
                walked.0.push(Segment::Key(k.clone()));
                cur = m
                    .get_mut(k)
                    .ok_or_else(|| SetError::Path("internal".into()))?;
            }
            Segment::Index(n) => {
                let Value::Array(a) = cur else {
                    return Err(SetError::Path(format!(
                        "{} is not a list",
                        bounded(&walked.to_string())
                    )));
                };
                let len = a.len();
                walked.0.push(Segment::Index(*n));
                cur = a.get_mut(*n).ok_or_else(|| {
                    SetError::Path(format!(
                        "{walked} is out of range (the list has {len} items)"
                    ))
                })?;
            }
        }
    }
    let mut msg = None;
    merge_checked(cur, &value, &walked, &mut |_, d| {
        if d.is_error() {
            msg = Some(d.message);
        }
    });
    if let Some(m) = msg {
        return Err(SetError::Type(walked.to_string(), m));
    }
    match unknown {
        Some((k, hint)) => Err(SetError::Unknown(k, hint)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_near_misses_warn_and_open_maps_do_not() {
        let mut base = json!({"app": {"replicas": 2, "labels": {"team": "a"}}});
        let mut warns = Vec::new();
        merge_checked(
            &mut base,
            &json!({"app": {"replcias": 3, "labels": {"tier": "web"}, "extra": 1}, "apps": 1}),
            &FieldPath::root(),
            &mut |p, d| warns.push((p.to_string(), d.hint.unwrap_or_default())),
        );
        assert_eq!(
            warns,
            [
                (
                    "app.replcias".to_string(),
                    "did you mean \"replicas\"?".to_string()
                ),
                ("apps".to_string(), "did you mean \"app\"?".to_string()),
            ]
        );
        let mut diags = Diagnostics::new();
        apply_sets(&mut base, &["app.replcas=4".into()], &mut diags);
        assert_eq!(diags.0.len(), 1);
        assert!(
            diags.0[0].message.contains("\"app.replcas\""),
            "{:?}",
            diags.0
        );
        assert_eq!(
            diags.0[0].hint.as_deref(),
            Some("did you mean \"replicas\"?")
        );
    }

    #[test]
    fn a_near_miss_keeps_the_key_it_suggests_for_the_editor() {
        let mut base = json!({"app": {"replicas": 2}});
        let mut got = Vec::new();
        merge_checked(
            &mut base,
            &json!({"app": {"replcias": 3, "zzzz": 1}}),
            &FieldPath::root(),
            &mut |_, d| got.push(d.suggestion),
        );
        // `zzzz` is no near miss of anything: a warning without a suggestion.
        assert_eq!(got, [Some("replicas".to_string())]);
    }

    #[test]
    fn deep_merge_and_type_checks() {
        let mut base =
            json!({"app": {"replicas": 2, "labels": {"a": "1"}}, "list": [1, 2], "opt": null});
        let mut errs = Vec::new();
        merge_checked(
            &mut base,
            &json!({"app": {"replicas": 3.5, "labels": {"b": "2"}}, "list": [3], "opt": {"x": 1}}),
            &FieldPath::root(),
            &mut |p, d| errs.push((p.to_string(), d)),
        );
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(base["app"]["labels"], json!({"a": "1", "b": "2"}));
        assert_eq!(base["list"], json!([3]));
        merge_checked(
            &mut base,
            &json!({"app": "flat", "list": {"a": 1}, "new": 1}),
            &FieldPath::root(),
            &mut |p, d| errs.push((p.to_string(), d)),
        );
        let codes: Vec<_> = errs.iter().map(|(p, d)| (p.as_str(), d.code)).collect();
        assert_eq!(
            codes,
            vec![
                ("app", codes::KUREL_OVERRIDE_TYPE),
                ("list", codes::KUREL_OVERRIDE_TYPE),
                ("new", codes::KUREL_UNKNOWN_PARAMETER)
            ]
        );
    }

    /// A set path is bounded by `yaml-depth` before anything is built along it (issue 39): the
    /// run's check names each too deep, its value quoted short; `apply_sets` itself refuses what
    /// no limit could allow (over 512), and builds what is allowed.
    #[test]
    fn set_paths_are_bounded_by_the_depth_limit() {
        let path = |n: usize| vec!["a"; n].join(".");
        let sets = [
            "x=1".to_string(),
            format!("{}=1", path(129)),
            format!("{}=1", path(128)),
        ];
        let found = too_deep_sets(&sets, 128);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].code, codes::YAML_BUDGET);
        assert_eq!(found[0].path.as_deref(), Some("[1]"));
        assert!(found[0]
            .message
            .contains("129 segments, more than the limit of 128 (yaml-depth)"));
        assert!(found[0].message.len() < 200, "{}", found[0].message);
        assert!(too_deep_sets(&sets, 129).is_empty());
        let mut p = json!({});
        let mut d = Diagnostics::new();
        apply_sets(&mut p, &[format!("{}=1", path(513))], &mut d);
        assert_eq!(d.0.len(), 1, "{d:?}");
        assert_eq!(d.0[0].code, codes::YAML_BUDGET);
        assert_eq!(p, json!({}), "nothing is built");
        let mut d = Diagnostics::new();
        apply_sets(&mut p, &[format!("{}=1", path(512))], &mut d);
        assert!(!d.has_errors(), "{d:?}");
        let leaf = (0..511).try_fold(&p["a"], |v, _| v.get("a"));
        assert_eq!(leaf, Some(&json!(1)));
    }

    #[test]
    fn sets_take_the_parameter_type() {
        let mut p =
            json!({"image": {"tag": "1.0"}, "replicas": 1, "hosts": ["a"], "kurel": {"name": "x"}});
        let mut d = Diagnostics::new();
        apply_sets(
            &mut p,
            &[
                "image.tag=1.10".into(),
                "replicas=4".into(),
                "hosts[0]=b".into(),
            ],
            &mut d,
        );
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(p["image"]["tag"], json!("1.10"));
        assert_eq!(p["replicas"], json!(4));
        assert_eq!(p["hosts"], json!(["b"]));
        apply_sets(
            &mut p,
            &[
                "replicas=many".into(),
                "hosts[3]=x".into(),
                "kurel.name=y".into(),
                "nope".into(),
            ],
            &mut d,
        );
        assert_eq!(d.0.len(), 4);
        assert!(d
            .0
            .iter()
            .all(|x| x.is_error() && x.file.as_deref() == Some(SET_FILE)));
    }
}
