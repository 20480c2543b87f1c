//! Flux's `spec.postBuild` substitution applied to rendered objects, as kustomize-controller
//! applies it after `kustomize build`.
//!
//! For each object that does not opt out (label or annotation
//! `kustomize.toolkit.fluxcd.io/substitute: disabled`): the object is written as YAML text,
//! every `${…}` of the text is substituted ([`super::envsubst`]), and the text is read back, so
//! a substituted value is typed by YAML (`replicas: ${N}` with `N=3` is the number 3). Nothing
//! happens unless there is at least one variable or the strategy is [`Strategy::Always`].
//!
//! The text is the one Flux substitutes: kustomize-controller writes each resource with
//! `res.AsYAML()`, kustomize's JSON passed through `sigs.k8s.io/yaml.JSONToYAML` (go-yaml v2),
//! and reads the result back with `YAMLToJSON` (fluxcd/pkg `kustomize/kustomize_varsub.go`).
//! [`super::goyaml`] writes objects as go-yaml v2 does. The quotes of the source file are lost
//! on the way (kustomize's JSON has none), so a quoted `"${PORT}"` is written bare and `8080`
//! comes back a number, in Flux as here (fluxcd/flux2#1839); a string go-yaml must quote (`'${a}:
//! x'`) stays quoted, and what is substituted into it stays text, in go-yaml's quoting.
//!
//! ```
//! use serde_json::json;
//! use kiln_core::flux::postbuild::{apply, PostBuild};
//! use kiln_core::flux::variables::Variables;
//!
//! let mut vars = Variables::new();
//! vars.insert("replicas", "3");
//! vars.insert("app", "shop");
//! let settings = PostBuild::new(vars);
//! let obj = json!({"kind": "Deployment", "metadata": {"name": "${app}"}, "spec": {"replicas": "${replicas}"}});
//! let out = apply(obj, &settings).unwrap();
//! assert_eq!(out, json!({"kind": "Deployment", "metadata": {"name": "shop"}, "spec": {"replicas": 3}}));
//! ```

use std::collections::BTreeMap;
use std::fmt;

use rayon::prelude::*;
use serde_json::Value;

use super::envsubst::{self, ErrorKind, Options};
use super::lint;
use super::variables::{VariableSource, Variables, NAME_PATTERN};
use super::{DISABLED, SUBSTITUTE_KEY};
use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::{parse_file, Document, YamlLimits};
use crate::fieldpath::{At, FieldPath, Step};

/// When substitution runs (`spec.postBuild.substituteStrategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Strategy {
    /// Only when at least one variable is available (Flux's default).
    #[default]
    WithVariables,
    /// Always, even without variables (so strict mode catches every `${…}`).
    Always,
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Strategy::WithVariables => "WithVariables",
            Strategy::Always => "Always",
        })
    }
}

/// The kind of a `substituteFrom` source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceKind {
    /// A ConfigMap: its `data`.
    ConfigMap,
    /// A Secret: its `data`, base64-decoded (or `stringData`).
    Secret,
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SourceKind::ConfigMap => "ConfigMap",
            SourceKind::Secret => "Secret",
        })
    }
}

/// One `substituteFrom` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceRef {
    /// ConfigMap or Secret.
    pub kind: SourceKind,
    /// Its name (in the Kustomization's namespace).
    pub name: String,
    /// A missing source is skipped instead of failing.
    pub optional: bool,
}

/// A Kustomization's `spec.postBuild` block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spec {
    /// `substitute`: inline variables, overriding every source.
    pub substitute: BTreeMap<String, String>,
    /// `substituteFrom`: sources, later ones overriding earlier ones.
    pub substitute_from: Vec<SourceRef>,
    /// `substituteStrategy`.
    pub strategy: Strategy,
}

impl Spec {
    /// Read a `postBuild` block (`null` is an empty one). Every problem is reported, each with
    /// its path inside the block (KLN8007).
    pub fn parse(block: &Value) -> Result<Spec, Diagnostics> {
        let mut spec = Spec::default();
        let mut errs = Diagnostics::new();
        let bad = |errs: &mut Diagnostics, path: FieldPath, msg: String, hint: &str| {
            errs.push(
                Diagnostic::error(codes::FLUX_POSTBUILD, msg)
                    .at(path.to_string())
                    .with_hint(hint),
            )
        };
        let root = FieldPath::root();
        let map = match block {
            Value::Null => return Ok(spec),
            Value::Object(m) => m,
            other => {
                bad(
                    &mut errs,
                    root,
                    format!("postBuild must be a mapping, not {}", kind_of(other)),
                    "write postBuild as a mapping with substitute, substituteFrom and substituteStrategy",
                );
                return Err(errs);
            }
        };
        for (key, v) in map {
            let p = root.key(key);
            match key.as_str() {
                "substitute" => match v {
                    Value::Null => {}
                    Value::Object(vars) => {
                        for (name, value) in vars {
                            match value {
                                Value::String(s) => {
                                    spec.substitute.insert(name.clone(), s.clone());
                                }
                                other => bad(
                                    &mut errs,
                                    p.key(name),
                                    format!("a substitute value must be a string, not {}", kind_of(other)),
                                    "quote the value (\"3\", \"true\"); the Kustomization API accepts strings only",
                                ),
                            }
                        }
                    }
                    other => bad(
                        &mut errs,
                        p,
                        format!("substitute must be a mapping, not {}", kind_of(other)),
                        "write substitute as NAME: value pairs",
                    ),
                },
                "substituteFrom" => match v {
                    Value::Null => {}
                    Value::Array(items) => {
                        for (i, item) in items.iter().enumerate() {
                            if let Some(r) = source_ref(item, &p.index(i), &mut errs) {
                                spec.substitute_from.push(r);
                            }
                        }
                    }
                    other => bad(
                        &mut errs,
                        p,
                        format!("substituteFrom must be a list, not {}", kind_of(other)),
                        "write substituteFrom as a list of {kind, name, optional} entries",
                    ),
                },
                "substituteStrategy" => match v.as_str() {
                    Some("WithVariables") => spec.strategy = Strategy::WithVariables,
                    Some("Always") => spec.strategy = Strategy::Always,
                    _ => bad(
                        &mut errs,
                        p,
                        format!("unknown substituteStrategy {}", short(v)),
                        "use WithVariables (the default) or Always",
                    ),
                },
                other => bad(
                    &mut errs,
                    p,
                    format!("unknown postBuild field {other:?}"),
                    "postBuild has substitute, substituteFrom and substituteStrategy",
                ),
            }
        }
        if errs.is_empty() {
            Ok(spec)
        } else {
            Err(errs)
        }
    }

    /// The variables: each source's data, looked up with `lookup` (the door finds the
    /// ConfigMaps and Secrets; `None` when there is no such object), merged in Flux's order. A
    /// missing source that is not optional is an error (KLN8006); every one is reported.
    pub fn variables(
        &self,
        mut lookup: impl FnMut(&SourceRef) -> Option<BTreeMap<String, String>>,
    ) -> Result<Variables, Diagnostics> {
        let mut sources = Vec::new();
        let mut errs = Diagnostics::new();
        for (i, r) in self.substitute_from.iter().enumerate() {
            match lookup(r) {
                Some(data) => sources.push(VariableSource {
                    secret: r.kind == SourceKind::Secret,
                    data,
                }),
                None if r.optional => {}
                None => errs.push(
                    Diagnostic::error(
                        codes::FLUX_SUBSTITUTE_FROM,
                        format!("substituteFrom: {}/{} not found", r.kind, r.name),
                    )
                    .at(FieldPath::root().key("substituteFrom").index(i).to_string())
                    .with_hint(format!(
                        "provide the {} (same namespace as the Kustomization), or mark the entry optional: true",
                        r.kind
                    )),
                ),
            }
        }
        if errs.is_empty() {
            Ok(Variables::merge(&sources, &self.substitute))
        } else {
            Err(errs)
        }
    }
}

fn source_ref(item: &Value, path: &FieldPath, errs: &mut Diagnostics) -> Option<SourceRef> {
    let mut fail = |p: FieldPath, msg: String, hint: &str| {
        errs.push(
            Diagnostic::error(codes::FLUX_POSTBUILD, msg)
                .at(p.to_string())
                .with_hint(hint),
        )
    };
    let Some(m) = item.as_object() else {
        fail(
            path.clone(),
            format!(
                "a substituteFrom entry must be a mapping, not {}",
                kind_of(item)
            ),
            "write {kind: ConfigMap, name: NAME}",
        );
        return None;
    };
    let mut ok = true;
    for k in m.keys() {
        if !matches!(k.as_str(), "kind" | "name" | "optional") {
            fail(
                path.key(k),
                format!("unknown substituteFrom field {k:?}"),
                "an entry has kind, name and optional",
            );
            ok = false;
        }
    }
    let kind = match m.get("kind").and_then(Value::as_str) {
        Some("ConfigMap") => Some(SourceKind::ConfigMap),
        Some("Secret") => Some(SourceKind::Secret),
        _ => {
            fail(
                path.key("kind"),
                format!(
                    "substituteFrom kind must be ConfigMap or Secret, not {}",
                    m.get("kind").map_or("missing".to_string(), short)
                ),
                "use kind: ConfigMap or kind: Secret",
            );
            None
        }
    };
    let name = match m.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => Some(n.to_string()),
        _ => {
            fail(
                path.key("name"),
                "a substituteFrom entry needs a name".to_string(),
                "name the ConfigMap or Secret",
            );
            None
        }
    };
    let optional = match m.get("optional") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            fail(
                path.key("optional"),
                format!("optional must be true or false, not {}", short(other)),
                "write optional: true or optional: false",
            );
            ok = false;
            false
        }
    };
    Some(SourceRef {
        kind: kind?,
        name: name?,
        optional,
    })
    .filter(|_| ok)
}

/// A value's type in a message.
fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// A scalar as written in a message (configuration values, not variable values).
fn short(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(40) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// Everything one substitution run needs.
#[derive(Debug, Clone)]
pub struct PostBuild {
    /// The variables (see [`Spec::variables`], [`Variables::merge`]).
    pub variables: Variables,
    /// When substitution runs.
    pub strategy: Strategy,
    /// Strict mode (kustomize-controller's `StrictPostBuildSubstitutions` feature gate, on by
    /// default since Flux 2.9): a variable that is not set is an error, not empty.
    pub strict: bool,
    /// Most bytes substitution may produce: each object's (intermediate values included), and
    /// the substituted objects together.
    pub max_output_bytes: usize,
    /// Limits for reading the substituted text back.
    pub yaml: YamlLimits,
}

impl Default for PostBuild {
    fn default() -> Self {
        Self::new(Variables::new())
    }
}

impl PostBuild {
    /// These variables, strategy `WithVariables`, strict, default limits.
    pub fn new(variables: Variables) -> Self {
        Self {
            variables,
            strategy: Strategy::WithVariables,
            strict: true,
            max_output_bytes: crate::limits::DEFAULT_OUTPUT_BYTES,
            yaml: YamlLimits::default(),
        }
    }

    /// Whether substitution runs at all: there are variables, or the strategy is `Always`.
    pub fn runs(&self) -> bool {
        !self.variables.is_empty() || self.strategy == Strategy::Always
    }

    fn options(&self) -> Options {
        Options {
            strict: self.strict,
            max_output_bytes: self.max_output_bytes,
        }
    }
}

/// Whether the object opts out: label or annotation `kustomize.toolkit.fluxcd.io/substitute:
/// disabled`.
pub fn opted_out(object: &Value) -> bool {
    let meta = object.get("metadata");
    ["labels", "annotations"].iter().any(|field| {
        meta.and_then(|m| m.get(field))
            .and_then(|m| m.get(SUBSTITUTE_KEY))
            .and_then(Value::as_str)
            == Some(DISABLED)
    })
}

/// The variable names that Flux refuses (KLN8003), one diagnostic each. Flux checks them
/// whenever it substitutes an object.
pub fn check_names(variables: &Variables) -> Result<(), Diagnostics> {
    let errs: Vec<Diagnostic> = variables
        .invalid_names()
        .map(|n| {
            Diagnostic::error(
                codes::FLUX_VARIABLE_NAME,
                format!("variable name {n:?} is invalid: it must match {NAME_PATTERN}"),
            )
            .with_hint(
                "rename the key in postBuild.substitute or in the substituteFrom ConfigMap/Secret: a letter or _, then letters, digits or _",
            )
        })
        .collect();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(Diagnostics(errs))
    }
}

/// Substitute one object (returned unchanged when it opts out or substitution does not run).
/// Every problem is reported: each unset variable and bad expression with the field it is in.
pub fn apply(object: Value, settings: &PostBuild) -> Result<Value, Diagnostics> {
    if opted_out(&object) || !settings.runs() {
        return Ok(object);
    }
    check_names(&settings.variables)?;
    let mut out = substitute_each(vec![object], settings)
        .map_err(|errs| placed(errs, |_, d, p| at_path(d, p)))?;
    Ok(out.pop().unwrap_or_default())
}

/// Substitute every object, in parallel; all or nothing. The variable names are checked once.
pub fn apply_all(objects: Vec<Value>, settings: &PostBuild) -> Result<Vec<Value>, Diagnostics> {
    if !settings.runs() {
        return Ok(objects);
    }
    if objects.iter().any(|o| !opted_out(o)) {
        check_names(&settings.variables)?;
    }
    substitute_each(objects, settings).map_err(|errs| placed(errs, |_, d, p| at_path(d, p)))
}

/// [`apply_all`] for a caller that places each problem itself: every problem with the index of
/// its object (`None` for the variable names, which are no object's).
pub fn apply_each(
    objects: Vec<Value>,
    settings: &PostBuild,
) -> Result<Vec<Value>, Vec<(Option<usize>, Diagnostic)>> {
    if !settings.runs() {
        return Ok(objects);
    }
    if objects.iter().any(|o| !opted_out(o)) {
        check_names(&settings.variables)
            .map_err(|ds| ds.0.into_iter().map(|d| (None, d)).collect::<Vec<_>>())?;
    }
    substitute_each(objects, settings).map_err(|errs| {
        errs.into_iter()
            .flat_map(|(i, ps)| {
                let ds = placed(vec![(i, ps)], |_, d, p| at_path(d, p));
                ds.0.into_iter().map(move |d| (Some(i), d))
            })
            .collect()
    })
}

/// Substitute documents read from files, locating problems in the files (file, line, field).
/// How a file quotes a value does not matter, as in Flux: the text substituted is go-yaml's.
pub fn apply_documents(docs: &[Document], settings: &PostBuild) -> Result<Vec<Value>, Diagnostics> {
    if !settings.runs() {
        return Ok(docs.iter().map(|d| d.value.clone()).collect());
    }
    if docs.iter().any(|d| !opted_out(&d.value)) {
        check_names(&settings.variables)?;
    }
    let objects = docs.iter().map(|d| d.value.clone()).collect();
    substitute_each(objects, settings).map_err(|errs| {
        placed(errs, |i, d, p| match p {
            Some(p) => docs[i].diag(d, &p),
            None => d.in_document(docs[i].file(), docs[i].index),
        })
    })
}

/// A problem and the field it is in.
type Problem = (Diagnostic, Option<FieldPath>);

fn at_path(d: Diagnostic, p: Option<FieldPath>) -> Diagnostic {
    match p {
        Some(p) => d.at(p.to_string()),
        None => d,
    }
}

/// The problems of each object (by its index), placed by `place`, sorted.
fn placed(
    errs: Vec<(usize, Vec<Problem>)>,
    place: impl Fn(usize, Diagnostic, Option<FieldPath>) -> Diagnostic,
) -> Diagnostics {
    let mut ds = Diagnostics::new();
    for (i, ps) in errs {
        ds.extend(ps.into_iter().map(|(d, p)| place(i, d, p)));
    }
    ds.sort();
    ds
}

/// Substitute each object that does not opt out, all or nothing; the problems of the objects
/// that fail, by index. The results together stay within the output limit, and no result is
/// built before that is known: each object's text is measured first (in parallel), the sizes
/// are added in the objects' order (so the object named when they pass the limit is the same on
/// every run), and only then are the texts built and read back.
fn substitute_each(
    objects: Vec<Value>,
    settings: &PostBuild,
) -> Result<Vec<Value>, Vec<(usize, Vec<Problem>)>> {
    let measured: Vec<Result<Option<Measured>, Vec<Problem>>> = objects
        .par_iter()
        .map(|o| {
            if opted_out(o) || !affected(o) {
                // Writing and reading back changes nothing: kiln's YAML round-trips.
                Ok(None)
            } else {
                measure(o, settings).map(Some)
            }
        })
        .collect();
    let mut errs = Vec::new();
    let mut total = 0usize;
    let mut within = true;
    for (i, m) in measured.iter().enumerate() {
        match m {
            Err(ps) => errs.push((i, ps.clone())),
            Ok(Some(m)) if within => {
                total = total.saturating_add(m.size);
                if total > settings.max_output_bytes {
                    within = false;
                    errs.push((i, vec![(too_large_together(&objects[i], settings), None)]));
                } else if m.size > settings.yaml.max_input_bytes {
                    errs.push((
                        i,
                        vec![(too_large_to_read(&objects[i], m.size, settings), None)],
                    ));
                }
            }
            Ok(_) => {}
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let built: Vec<Result<Value, Vec<Problem>>> = objects
        .into_par_iter()
        .zip(measured)
        .map(|(o, m)| match m {
            Ok(Some(m)) => build(o, &m, settings),
            _ => Ok(o),
        })
        .collect();
    let mut out = Vec::with_capacity(built.len());
    for (i, r) in built.into_iter().enumerate() {
        match r {
            Ok(v) => out.push(v),
            Err(ps) => errs.push((i, ps)),
        }
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}

/// An object's text as Flux substitutes it, parsed, and the size of its substitution.
struct Measured {
    template: envsubst::Template,
    size: usize,
}

/// The object as go-yaml v2 writes it ([`super::goyaml`]), parsed and measured with the
/// variables: every unset variable, bad expression and limit is found here, before anything of
/// the result is built.
fn measure(object: &Value, settings: &PostBuild) -> Result<Measured, Vec<Problem>> {
    let text = super::goyaml::marshal(object);
    let opts = settings.options();
    let measured = envsubst::Template::parse(&text).and_then(|template| {
        let size = template.size(&settings.variables, &opts)?;
        Ok(Measured { template, size })
    });
    measured.map_err(|e| locate(object, &e, &identity(object), settings))
}

/// Substitutions that fit one by one but not together.
fn too_large_together(object: &Value, settings: &PostBuild) -> Diagnostic {
    let d = diagnostic(
        &ErrorKind::TooLarge(settings.max_output_bytes),
        &identity(object),
    );
    Diagnostic {
        message: format!(
            "{}: with this object the substituted objects would be more than {} bytes together (the output limit)",
            identity(object),
            settings.max_output_bytes
        ),
        ..d
    }
}

/// A substituted object larger than the text it is read back within (`input-bytes`).
fn too_large_to_read(object: &Value, size: usize, settings: &PostBuild) -> Diagnostic {
    Diagnostic::error(
        codes::YAML_BUDGET,
        format!(
            "{}: after substitution the object would be {size} bytes, more than the limit of {} bytes it is read back within",
            identity(object),
            settings.yaml.max_input_bytes
        ),
    )
    .with_hint(crate::limits::Limit::InputBytes.hint("check the substitutions that repeat large values"))
}

/// Whether any string of the object (keys included) would change: holds `${` or `$$`.
pub(crate) fn affected(v: &Value) -> bool {
    match v {
        Value::String(s) => envsubst::is_affected(s),
        Value::Array(a) => a.iter().any(affected),
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| envsubst::is_affected(k) || affected(v)),
        _ => false,
    }
}

/// Most problems reported for one object.
const MAX_PROBLEMS: usize = 100;

/// A measured object substituted and read back as YAML 1.1 (go-yaml v2 reads it so in Flux).
fn build(object: Value, m: &Measured, settings: &PostBuild) -> Result<Value, Vec<Problem>> {
    let id = identity(&object);
    let out = match m
        .template
        .render(&settings.variables, &settings.options(), m.size)
    {
        Ok(out) => out,
        Err(e) => return Err(locate(&object, &e, &id, settings)),
    };
    let result_error = |msg: String| {
        let fields: Vec<String> = lint::lint(&object)
            .into_iter()
            .filter(|f| f.hazard == lint::Hazard::Reference)
            .take(5)
            .map(|f| f.path.to_string())
            .collect();
        let hint = if fields.is_empty() {
            "make the substituted values valid YAML where they are inserted".to_string()
        } else {
            format!(
                "a substituted value changed the object's YAML; check the values put into {} (Flux writes these fields unquoted whatever the source quotes, so a value holding `: ` or ` #` breaks them; keep such values out of bare fields)",
                fields.join(", ")
            )
        };
        vec![(
            Diagnostic::error(codes::FLUX_SUBSTITUTION_RESULT, format!("{id}: {msg}"))
                .with_hint(hint),
            None,
        )]
    };
    let docs = match parse_file("postBuild", out, &settings.yaml) {
        Ok(docs) => docs,
        Err(d) => {
            return Err(result_error(format!(
                "after substitution the object is not valid YAML: {}",
                scrub(&d.message, &settings.variables)
            )))
        }
    };
    let value = match <[Document; 1]>::try_from(docs) {
        Ok([doc]) if doc.value.is_object() => doc.value,
        Ok([doc]) => {
            return Err(result_error(format!(
                "after substitution the object is {}, not a mapping",
                kind_of(&doc.value)
            )))
        }
        Err(docs) => {
            return Err(result_error(format!(
                "after substitution the object is {} YAML documents, not one",
                docs.len()
            )))
        }
    };
    Ok(value)
}

/// "ConfigMap web/app", "Namespace apps", or "object" when it has no kind and name.
fn identity(o: &Value) -> String {
    let kind = o.get("kind").and_then(Value::as_str);
    let meta = |k: &str| {
        o.get("metadata")
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
    };
    match (kind, meta("name")) {
        (Some(k), Some(n)) => match meta("namespace") {
            Some(ns) if !ns.is_empty() => format!("{k} {ns}/{n}"),
            _ => format!("{k} {n}"),
        },
        (Some(k), None) => k.to_string(),
        _ => "object".to_string(),
    }
}

/// The diagnostics of a failed substitution: every field whose own text fails, with its path
/// (so that every unset variable is reported, not only the first), or the whole-text error
/// without a path when no single field explains it.
fn locate(object: &Value, e: &envsubst::Error, id: &str, settings: &PostBuild) -> Vec<Problem> {
    let mut problems: Vec<Problem> = Vec::new();
    let mut kinds = Vec::new();
    if !matches!(e.kind, ErrorKind::TooLarge(_) | ErrorKind::TooMuchWork) {
        let opts = settings.options();
        strings(object, &mut |at, s, _| {
            if problems.len() >= MAX_PROBLEMS || !envsubst::is_affected(s) {
                return;
            }
            if let Err(err) = envsubst::substitute(s, &settings.variables, &opts) {
                if matches!(err.kind, ErrorKind::TooLarge(_) | ErrorKind::TooMuchWork) {
                    return;
                }
                problems.push((diagnostic(&err.kind, id), Some(at.path())));
                kinds.push(err.kind);
            }
        });
    }
    if !kinds.contains(&e.kind) {
        problems.push((diagnostic(&e.kind, id), None));
    }
    problems
}

fn diagnostic(kind: &ErrorKind, id: &str) -> Diagnostic {
    let opt_out = format!("or label or annotate the object {SUBSTITUTE_KEY}: {DISABLED}");
    match kind {
        ErrorKind::Unset(name) => Diagnostic::error(
            codes::FLUX_VARIABLE_UNSET,
            format!("{id}: {kind}"),
        )
        .with_hint(format!(
            "set {name} in postBuild.substitute or a substituteFrom source, give it a default (${{{name}:=value}}), write $${{{name}}} for a literal ${{{name}}}, {opt_out}"
        )),
        ErrorKind::Syntax(_) => Diagnostic::error(
            codes::FLUX_SUBSTITUTION_SYNTAX,
            format!("{id}: variable substitution failed: {kind}"),
        )
        .with_hint(format!(
            "Flux reads every ${{ as the start of a substitution: write $${{ for a literal ${{ (shell arrays, ${{VAR[@]}}), {opt_out}"
        )),
        ErrorKind::NotUtf8 => Diagnostic::error(
            codes::FLUX_SUBSTITUTION_RESULT,
            format!("{id}: {kind}"),
        )
        .with_hint("substring and trim operators count bytes: cut values at character boundaries"),
        ErrorKind::TooLarge(_) | ErrorKind::TooMuchWork => Diagnostic::error(
            codes::FLUX_SUBSTITUTION_LIMIT,
            format!("{id}: {kind}"),
        )
        .with_hint(
            "check the substitutions that repeat or replace text (${v//p/r}) and the trim patterns; raise the output limit with --limit output-bytes=SIZE if the output is meant to be this large",
        ),
    }
}

/// Call `f` with every string of `v` and whether it is a key, keys included, in the order kiln
/// writes them.
pub(super) fn strings<'v>(v: &'v Value, f: &mut impl FnMut(&At<'_, 'v>, &str, bool)) {
    fn walk<'v>(
        v: &'v Value,
        steps: &mut Vec<Step<'v>>,
        f: &mut impl FnMut(&At<'_, 'v>, &str, bool),
    ) {
        match v {
            Value::String(s) => f(&At(steps), s, false),
            Value::Array(a) => {
                for (i, item) in a.iter().enumerate() {
                    steps.push(Step::Index(i));
                    walk(item, steps, f);
                    steps.pop();
                }
            }
            Value::Object(m) => {
                for (k, item) in m {
                    steps.push(Step::Key(k));
                    f(&At(steps), k, true);
                    walk(item, steps, f);
                    steps.pop();
                }
            }
            _ => {}
        }
    }
    walk(v, &mut Vec::new(), f);
}

/// Loader messages can quote text of the substituted YAML (values): drop what they quote and
/// any variable value, and the position (of the substituted text, not of any input file).
fn scrub(msg: &str, vars: &Variables) -> String {
    let mut m = msg.to_string();
    if let Some(i) = m.rfind(" at line ") {
        m.truncate(i);
    }
    let mut out = String::with_capacity(m.len());
    let mut quoted = false;
    for c in m.chars() {
        if c == '`' {
            if !quoted {
                out.push_str("`…");
            } else {
                out.push('`');
            }
            quoted = !quoted;
        } else if !quoted {
            out.push(c);
        }
    }
    for (_, v) in vars.iter() {
        if v.len() >= crate::redact::MIN_LEN {
            out = out.replace(v, crate::redact::REDACTED);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::parse_file;
    use serde_json::json;

    fn settings(pairs: &[(&str, &str)]) -> PostBuild {
        let mut v = Variables::new();
        for (k, val) in pairs {
            v.insert(*k, val);
        }
        PostBuild::new(v)
    }

    fn codes_of(ds: &Diagnostics) -> Vec<(&'static str, Option<String>)> {
        ds.iter().map(|d| (d.code.id, d.path.clone())).collect()
    }

    /// The output limit holds for the substituted objects together, not for each alone: the
    /// sizes are added in the objects' order, so the object named is the one whose result
    /// passes the limit, the same on every run; an object too large to be read back is refused
    /// before it is built.
    #[test]
    fn the_output_limit_holds_for_all_objects_together() {
        let cm = |i: usize| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}, "data": {"v": "${v}"}});
        let value = "x".repeat(1000);
        let mut s = settings(&[("v", &value)]);
        let one = apply(cm(0), &s).unwrap();
        let size = super::super::goyaml::marshal(&one).len();
        s.max_output_bytes = 4 * size;
        assert_eq!(apply_all((0..4).map(cm).collect(), &s).unwrap().len(), 4);
        for _ in 0..3 {
            let e = apply_all((0..6).map(cm).collect(), &s).unwrap_err();
            assert_eq!(codes_of(&e), [("KLN8005", None)], "{e:?}");
            assert!(
                e.0[0].message.starts_with(
                    "ConfigMap c4: with this object the substituted objects would be more than"
                ),
                "{}",
                e.0[0].message
            );
        }
        let docs = parse_file(
            "a.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {v: '${v}${v}'}\n".into(),
            &YamlLimits::default(),
        )
        .unwrap();
        s.yaml.max_input_bytes = size;
        let e = apply_documents(&docs, &s).unwrap_err();
        assert_eq!(e.0[0].code, codes::YAML_BUDGET, "{e:?}");
        assert!(e.0[0].message.contains("more than the limit of"), "{e:?}");
        assert_eq!(e.0[0].file.as_deref(), Some("a.yaml"));
    }

    #[test]
    fn retypes_substituted_values() {
        let s = settings(&[
            ("n", "123"),
            ("b", "true"),
            ("s", "x y"),
            ("list", "[a, b]"),
        ]);
        let o = json!({"kind": "K", "metadata": {"name": "a"}, "spec": {
            "n": "${n}", "quoted": "\"${n}\"", "b": "${b}", "s": "${s}", "mixed": "v${n}", "l": "${list}"
        }});
        let out = apply(o, &s).unwrap();
        assert_eq!(out["spec"]["n"], json!(123));
        assert_eq!(out["spec"]["b"], json!(true));
        assert_eq!(out["spec"]["s"], json!("x y"));
        assert_eq!(out["spec"]["mixed"], json!("v123"));
        assert_eq!(out["spec"]["l"], json!(["a", "b"]));
        // A string holding quote characters is written quoted; YAML reads the quotes away.
        assert!(out["spec"]["quoted"].is_string());
    }

    /// kustomize-controller substitutes `res.AsYAML()`: kustomize's JSON through go-yaml v2
    /// (fluxcd/pkg kustomize/kustomize_varsub.go). The source's quotes are gone by then
    /// (fluxcd/flux2#1839): a quoted `"${port}"` comes back a number, a quoted
    /// `"${replicas:=2}"` the number 2, and a value holding `: ` breaks the field, as in Flux.
    /// What go-yaml itself quotes (`${a}: x`) is single-quoted, so a `'` substituted into it
    /// breaks it too.
    #[test]
    fn quoted_source_fields_are_substituted_as_flux_writes_them() {
        let text = "kind: Deployment\nmetadata:\n  name: app\nspec:\n  replicas: \"${replicas:=2}\"\n  port: \"${port}\"\n  colon: '${a}: x'\n  list:\n    - \"${port}\"\n    - ${port}\n";
        let docs = parse_file("d.yaml", text.to_string(), &YamlLimits::default()).unwrap();
        let out = apply_documents(&docs, &settings(&[("port", "8080"), ("a", "A")])).unwrap();
        assert_eq!(out[0]["spec"]["replicas"], json!(2));
        assert_eq!(out[0]["spec"]["port"], json!(8080));
        assert_eq!(out[0]["spec"]["colon"], json!("A: x"));
        assert_eq!(out[0]["spec"]["list"], json!([8080, 8080]));
        let pw =
            "kind: Secret\nmetadata:\n  name: db\nstringData:\n  password: \"${db_password}\"\n";
        let docs = parse_file("s.yaml", pw.to_string(), &YamlLimits::default()).unwrap();
        let e = apply_documents(&docs, &settings(&[("db_password", "pa: ss")])).unwrap_err();
        assert_eq!(codes_of(&e)[0].0, "KLN8004");
        assert!(
            e.iter().all(|d| !d.to_string().contains("pa: ss")),
            "values stay out of messages"
        );
        let ok = apply_documents(&docs, &settings(&[("db_password", "pa:ss")])).unwrap();
        assert_eq!(ok[0]["stringData"]["password"], json!("pa:ss"));
        let docs = parse_file("d.yaml", text.to_string(), &YamlLimits::default()).unwrap();
        let e = apply_documents(&docs, &settings(&[("port", "1"), ("a", "it's")])).unwrap_err();
        assert_eq!(codes_of(&e)[0].0, "KLN8004");
    }

    #[test]
    fn opt_out_by_label_or_annotation() {
        let s = settings(&[("x", "1")]);
        for meta in [
            json!({"name": "a", "labels": {SUBSTITUTE_KEY: "disabled"}}),
            json!({"name": "a", "annotations": {SUBSTITUTE_KEY: "disabled"}}),
        ] {
            let o = json!({"kind": "K", "metadata": meta, "data": {"v": "${missing} $$"}});
            assert_eq!(apply(o.clone(), &s).unwrap(), o);
        }
        let o = json!({"kind": "K", "metadata": {"name": "a", "labels": {SUBSTITUTE_KEY: "enabled"}}, "data": {"v": "${x}"}});
        assert_eq!(apply(o, &s).unwrap()["data"]["v"], json!(1));
    }

    #[test]
    fn skipped_without_variables_unless_always() {
        let o =
            json!({"kind": "K", "metadata": {"name": "a"}, "data": {"v": "${missing}", "w": "$$"}});
        let mut s = PostBuild::default();
        assert_eq!(apply(o.clone(), &s).unwrap(), o);
        s.strategy = Strategy::Always;
        let err = apply(o.clone(), &s).unwrap_err();
        assert_eq!(codes_of(&err), [("KLN8001", Some("data.v".to_string()))]);
        assert_eq!(
            err.0[0].message,
            r#"K a: variable not set (strict mode): "missing""#
        );
        s.strict = false;
        assert_eq!(
            apply(o, &s).unwrap(),
            json!({"kind": "K", "metadata": {"name": "a"}, "data": {"v": null, "w": "$"}})
        );
    }

    #[test]
    fn reports_every_unset_variable_with_its_field() {
        let s = settings(&[("x", "1")]);
        let o = json!({"kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}, "data": {
            "a": "${one}", "b": "ok ${x}", "${two}": "v", "c": "${AUTH[@]}"
        }});
        let err = apply(o, &s).unwrap_err();
        assert_eq!(
            codes_of(&err),
            [
                ("KLN8001", Some("data.${two}".to_string())),
                ("KLN8001", Some("data.a".to_string())),
                ("KLN8002", Some("data.c".to_string())),
            ]
        );
        assert_eq!(
            err.0[1].message,
            r#"ConfigMap ns/a: variable not set (strict mode): "one""#
        );
        assert_eq!(
            err.0[2].message,
            "ConfigMap ns/a: variable substitution failed: missing closing brace"
        );
        assert!(err.iter().all(|d| d.hint.is_some()));
    }

    #[test]
    fn invalid_names_fail_only_when_substitution_runs() {
        let mut v = Variables::new();
        v.insert("bad-name", "x");
        v.insert("1x", "y");
        let s = PostBuild::new(v);
        let o = json!({"kind": "K", "metadata": {"name": "a"}});
        let err = apply(o.clone(), &s).unwrap_err();
        assert_eq!(codes_of(&err), [("KLN8003", None), ("KLN8003", None)]);
        assert_eq!(
            err.0[0].message,
            "variable name \"1x\" is invalid: it must match ^[_[:alpha:]][_[:alpha:][:digit:]]*$"
        );
        let off = json!({"kind": "K", "metadata": {"name": "a", "annotations": {SUBSTITUTE_KEY: "disabled"}}});
        assert_eq!(apply_all(vec![off.clone()], &s).unwrap(), vec![off]);
        assert_eq!(
            codes_of(&apply_all(vec![o], &s).unwrap_err())[0].0,
            "KLN8003"
        );
    }

    #[test]
    fn newlines_are_removed_from_values() {
        let s = settings(&[("v", "a\nb\n")]);
        let o = json!({"kind": "K", "metadata": {"name": "a"}, "data": {"v": "${v}"}});
        assert_eq!(apply(o, &s).unwrap()["data"]["v"], json!("ab"));
    }

    #[test]
    fn results_that_break_the_object_are_errors() {
        let s = settings(&[("v", "a: b"), ("doc", "x"), ("secretish", "hunter2: x")]);
        let o = json!({"kind": "K", "metadata": {"name": "a"}, "data": {"v": "${v}"}});
        let err = apply(o, &s).unwrap_err();
        assert_eq!(codes_of(&err), [("KLN8004", None)]);
        assert!(
            err.0[0].message.contains("not valid YAML"),
            "{}",
            err.0[0].message
        );
        assert!(err.0[0].hint.as_deref().unwrap_or("").contains("data.v"));
        // The value never shows up in the message.
        let o = json!({"kind": "K", "metadata": {"name": "a"}, "data": {"v": "${secretish}"}});
        let err = apply(o, &s).unwrap_err();
        assert!(
            !err.0[0].message.contains("hunter2"),
            "{}",
            err.0[0].message
        );
        // The whole object replaced by a scalar.
        let mut s2 = settings(&[("x", "1")]);
        s2.strict = false;
        let o = json!({"${x}": null});
        assert_eq!(apply(o, &s2).unwrap(), json!({"1": null}));
    }

    #[test]
    fn output_limit_applies() {
        let mut s = settings(&[("v", &"x".repeat(1000))]);
        s.max_output_bytes = 5000;
        let o = json!({"kind": "K", "metadata": {"name": "a"}, "data": {"v": "${v}${v}${v}${v}${v}${v}"}});
        let err = apply(o, &s).unwrap_err();
        assert_eq!(codes_of(&err), [("KLN8005", None)]);
    }

    #[test]
    fn objects_without_dollars_are_untouched() {
        let s = settings(&[("v", "1")]);
        let o = json!({"kind": "K", "metadata": {"name": "a"}, "data": {"f": 1.5, "s": "$ a$ b"}});
        assert_eq!(apply(o.clone(), &s).unwrap(), o);
    }

    #[test]
    fn spec_parsing_and_sources() {
        let block = json!({
            "substitute": {"a": "1"},
            "substituteFrom": [
                {"kind": "ConfigMap", "name": "vars"},
                {"kind": "Secret", "name": "creds", "optional": true},
                {"kind": "Secret", "name": "gone", "optional": true}
            ],
            "substituteStrategy": "Always"
        });
        let spec = Spec::parse(&block).unwrap();
        assert_eq!(spec.strategy, Strategy::Always);
        assert_eq!(spec.substitute_from.len(), 3);
        let vars = spec
            .variables(|r| match r.name.as_str() {
                "vars" => Some(BTreeMap::from([
                    ("a".into(), "0".into()),
                    ("b".into(), "2".into()),
                ])),
                "creds" => Some(BTreeMap::from([("t".into(), "tok".into())])),
                _ => None,
            })
            .unwrap();
        assert_eq!(vars.get("a"), Some("1"));
        assert_eq!(vars.get("b"), Some("2"));
        assert!(vars.is_secret("t"));
        let missing = Spec::parse(&json!({"substituteFrom": [{"kind": "ConfigMap", "name": "x"}]}))
            .unwrap()
            .variables(|_| None)
            .unwrap_err();
        assert_eq!(
            codes_of(&missing),
            [("KLN8006", Some("substituteFrom[0]".to_string()))]
        );
        let bad = Spec::parse(&json!({
            "substitute": {"a": 1},
            "substituteFrom": [{"kind": "Pod", "name": ""}, "x", {"kind": "Secret", "name": "s", "optional": "yes", "extra": 1}],
            "substituteStrategy": "Sometimes",
            "other": true
        }))
        .unwrap_err();
        let paths: Vec<String> = bad.iter().filter_map(|d| d.path.clone()).collect();
        assert_eq!(
            paths,
            [
                "substitute.a",
                "substituteFrom[0].kind",
                "substituteFrom[0].name",
                "substituteFrom[1]",
                "substituteFrom[2].extra",
                "substituteFrom[2].optional",
                "substituteStrategy",
                "other"
            ]
        );
        assert!(bad.iter().all(|d| d.code == codes::FLUX_POSTBUILD));
        assert_eq!(Spec::parse(&Value::Null).unwrap(), Spec::default());
        let e = Spec::parse(&json!([])).unwrap_err();
        assert!(e.0.iter().all(|d| d.code == codes::FLUX_POSTBUILD), "{e:?}");
    }
}
