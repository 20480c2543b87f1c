//! Kubernetes schemas for static analysis: the built-in kinds bundled offline, plus CRDs.
//!
//! kro checks every resource template against the OpenAPI schema of its kind at build time
//! (unknown fields, literal type mismatches) and needs each kind's scope. kro asks the cluster;
//! kiln has no cluster, so the built-in schemas of one Kubernetes minor are compiled into the
//! binary (`core/data/kubernetes/`, produced by `scripts/extract-k8s-schemas.py` from the
//! `kubernetes-validate` wheel) and CustomResourceDefinitions found in the inputs are added with
//! [`Schemas::add_crd`].
//!
//! The bundled data is decompressed and parsed once per process (about 1.4 MB of JSON) and shared
//! by every [`Schemas`] through an `Arc`, so [`Schemas::bundled`] is cheap to call per definition.

mod compiled;
mod node;
mod walk;

pub use node::{NodeChild, SchemaNode};

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::fieldpath::FieldPath;

/// `$defs` of the bundled `_definitions.json`: kept gzipped in the repository (mtime 0, so
/// refreshes are reproducible) and inflated by `build.rs`.
const DEFINITIONS: &str = include_str!(concat!(env!("OUT_DIR"), "/definitions.json"));
// `DEF_INDEX` and `KIND_INDEX`: static tables `build.rs` derives from the bundled data.
include!(concat!(env!("OUT_DIR"), "/definitions_index.rs"));
/// Package version, Kubernetes minor and wheel checksum of the bundled data.
const VERSION: &str = include_str!("../../data/kubernetes/VERSION");

/// The `$defs` key of ObjectMeta: `metadata` of every kind is checked against it, also for CRDs,
/// whose own schemas usually say only `metadata: {type: object}`.
pub(crate) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// One built-in kind: its `$defs` key and scope.
#[derive(Debug, Clone, Copy)]
struct BundledKind {
    def_key: &'static str,
    namespaced: bool,
}

/// The bundled data, shared by all [`Schemas`].
///
/// A run typically needs a few dozen of the ~860 definitions, so each is parsed on first use. The
/// build indexed the text, so start-up neither scans nor parses it.
#[derive(Debug)]
pub(crate) struct Bundle {
    /// Each definition of `DEF_INDEX`, parsed when first asked for. Shared: schema nodes of a
    /// definition hold it rather than a copy (PodSpec alone is tens of kilobytes of JSON).
    parsed: Vec<OnceLock<Arc<Value>>>,
    /// Each definition prepared for checking rendered objects, when first needed.
    compiled: Vec<OnceLock<Arc<compiled::Compiled>>>,
    /// The root schema of each built-in kind (`KIND_INDEX`), when first looked up.
    kind_roots: Vec<OnceLock<Arc<Value>>>,
}

impl Bundle {
    fn load() -> Self {
        Self {
            parsed: DEF_INDEX.iter().map(|_| OnceLock::new()).collect(),
            compiled: DEF_INDEX.iter().map(|_| OnceLock::new()).collect(),
            kind_roots: KIND_INDEX.iter().map(|_| OnceLock::new()).collect(),
        }
    }

    /// A definition by `$defs` key.
    pub(crate) fn def(&self, key: &str) -> Option<&Value> {
        self.def_shared(key).map(|d| &**d)
    }

    /// A definition by `$defs` key, to share.
    pub(crate) fn def_shared(&self, key: &str) -> Option<&Arc<Value>> {
        let i = self.def_index(key)?;
        Some(self.parsed[i].get_or_init(|| {
            let (_, start, end) = DEF_INDEX[i];
            // The data is part of the build (build.rs parsed it): failing here is a packaging
            // bug, not a user error, and the tests exercise this path.
            Arc::new(
                serde_json::from_str(&DEFINITIONS[start..end])
                    .expect("bundled definition is valid JSON"),
            )
        }))
    }

    /// The index of a definition in `DEF_INDEX`, by `$defs` key.
    fn def_index(&self, key: &str) -> Option<usize> {
        DEF_INDEX.binary_search_by(|(k, ..)| (*k).cmp(key)).ok()
    }

    /// The built-in kind `<apiVersion>/<kind>`, and its position in `KIND_INDEX`.
    fn kind(&self, api_version: &str, kind: &str) -> Option<(usize, BundledKind)> {
        let i = kind_position(api_version, kind)?;
        let (_, def_key, namespaced) = KIND_INDEX[i];
        Some((
            i,
            BundledKind {
                def_key,
                namespaced,
            },
        ))
    }

    /// The root schema of the built-in kind at `i` of `KIND_INDEX`: a reference to its
    /// definition, built once (every rendered object's check looks its kind up).
    fn kind_root(&self, i: usize, def_key: &str) -> Arc<Value> {
        self.kind_roots[i]
            .get_or_init(|| Arc::new(serde_json::json!({ "$ref": format!("#/$defs/{def_key}") })))
            .clone()
    }

    /// Every built-in kind, sorted by `<apiVersion>/<kind>`.
    #[cfg(test)]
    fn kinds(&self) -> impl Iterator<Item = (&'static str, BundledKind)> {
        KIND_INDEX.iter().map(|&(key, def_key, namespaced)| {
            (
                key,
                BundledKind {
                    def_key,
                    namespaced,
                },
            )
        })
    }

    /// Number of bundled definitions.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.parsed.len()
    }

    fn shared() -> Arc<Self> {
        static BUNDLE: OnceLock<Arc<Bundle>> = OnceLock::new();
        BUNDLE.get_or_init(|| Arc::new(Self::load())).clone()
    }
}

/// Every built-in kind of the bundled Kubernetes version, as `(apiVersion, kind)`, sorted.
pub fn builtin_kinds() -> impl Iterator<Item = (&'static str, &'static str)> {
    KIND_INDEX
        .iter()
        .filter_map(|&(key, ..)| key.rsplit_once('/'))
}

/// Whether the bundled Kubernetes version serves `kind` at `api_version`. Called for every
/// rendered object, so it searches the sorted table without building a key.
pub fn is_builtin_kind(api_version: &str, kind: &str) -> bool {
    // A kind never holds `/`: without this, `apps` + `v1/Deployment` would spell a key.
    !kind.contains('/') && kind_position(api_version, kind).is_some()
}

/// The position of the key `<apiVersion>/<kind>` in `KIND_INDEX`, found without building the key.
fn kind_position(api_version: &str, kind: &str) -> Option<usize> {
    KIND_INDEX
        .binary_search_by(|(key, ..)| {
            // `key` is `<apiVersion>/<kind>`; compare it with the pair piecewise, in the
            // order the table is sorted by (the whole key, byte by byte).
            let k = key.as_bytes();
            let (a, rest) = k.split_at(api_version.len().min(k.len()));
            a.cmp(api_version.as_bytes())
                .then_with(|| match rest.split_first() {
                    None => std::cmp::Ordering::Less,
                    Some((&c, tail)) => c.cmp(&b'/').then_with(|| tail.cmp(kind.as_bytes())),
                })
        })
        .ok()
}

/// The group of an `apiVersion` (`apps/v1` → `apps`, `v1` → ``).
pub fn group_of(api_version: &str) -> &str {
    match api_version.rsplit_once('/') {
        Some((g, _)) => g,
        None => "",
    }
}

/// Whether `group` (`""` for the core group) is one the bundled Kubernetes version serves.
pub fn is_builtin_group(group: &str) -> bool {
    static GROUPS: std::sync::OnceLock<std::collections::BTreeSet<&'static str>> =
        std::sync::OnceLock::new();
    GROUPS
        .get_or_init(|| builtin_kinds().map(|(api, _)| group_of(api)).collect())
        .contains(group)
}

/// The schema of one CRD version.
#[derive(Debug, Clone)]
struct CrdKind {
    root: Arc<Value>,
    namespaced: bool,
    /// `root` prepared for checking rendered objects, when first needed; shared by the clones
    /// of the [`Schemas`] it was added to.
    compiled: Arc<OnceLock<compiled::Compiled>>,
}

/// Schemas known to a static check: the bundled built-in kinds plus CRDs added from the inputs.
#[derive(Debug, Clone)]
pub struct Schemas {
    bundle: Arc<Bundle>,
    /// `(apiVersion, kind)` → schema; consulted before the bundle, so an input CRD wins.
    crds: BTreeMap<(String, String), CrdKind>,
}

impl Schemas {
    /// The built-in kinds of the bundled Kubernetes version. Parses the data on first use only.
    pub fn bundled() -> Self {
        Self {
            bundle: Bundle::shared(),
            crds: BTreeMap::new(),
        }
    }

    /// The Kubernetes minor version of the bundled schemas, e.g. `"1.37"`.
    pub fn kubernetes_version() -> &'static str {
        VERSION
            .lines()
            .find_map(|l| l.strip_prefix("kubernetes="))
            .unwrap_or("unknown")
    }

    /// Add the kinds of an `apiextensions.k8s.io/v1` CustomResourceDefinition: one per served
    /// version, with its `openAPIV3Schema` (a version without one accepts any fields) and the
    /// CRD's scope.
    pub fn add_crd(&mut self, crd: &Value) -> Result<(), String> {
        if crd.get("apiVersion").and_then(Value::as_str) != Some("apiextensions.k8s.io/v1")
            || crd.get("kind").and_then(Value::as_str) != Some("CustomResourceDefinition")
        {
            return Err("not an apiextensions.k8s.io/v1 CustomResourceDefinition".into());
        }
        let spec = crd.get("spec").ok_or("CRD has no spec")?;
        let str_at = |p: &[&str]| {
            p.iter()
                .try_fold(spec, |v, k| v.get(*k))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let group = str_at(&["group"]).ok_or("CRD has no spec.group")?;
        let kind = str_at(&["names", "kind"]).ok_or("CRD has no spec.names.kind")?;
        let namespaced = match str_at(&["scope"]) {
            Some("Namespaced") => true,
            Some("Cluster") => false,
            other => {
                return Err(format!(
                    "CRD {kind}.{group}: spec.scope must be Namespaced or Cluster, got {other:?}"
                ))
            }
        };
        let versions = spec
            .get("versions")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("CRD {kind}.{group} has no spec.versions"))?;
        for v in versions {
            let name = v
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("CRD {kind}.{group}: a version has no name"))?;
            // An unserved version cannot be created, so a template using it is not valid either.
            if v.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let root = v
                .pointer("/schema/openAPIV3Schema")
                .cloned()
                .unwrap_or_else(|| {
                    serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
                });
            self.crds.insert(
                (format!("{group}/{name}"), kind.to_string()),
                CrdKind {
                    root: Arc::new(root),
                    namespaced,
                    compiled: Arc::default(),
                },
            );
        }
        Ok(())
    }

    /// A schema written out in full (an instance's spec schema), as a node whose `$ref`s resolve
    /// against the bundled definitions. `root` makes `metadata` ObjectMeta.
    pub fn node_of(&self, schema: &Value, root: bool) -> SchemaNode {
        SchemaNode::new(self.bundle.clone(), schema, root)
    }

    /// The schema of a kind, or `None` when neither the bundle nor an added CRD knows it.
    pub fn lookup(&self, api_version: &str, kind: &str) -> Option<KindSchema> {
        // Every rendered object is looked up: the key is built only when there are CRDs.
        let crd = (!self.crds.is_empty())
            .then(|| self.crds.get(&(api_version.to_string(), kind.to_string())))
            .flatten();
        if let Some(c) = crd {
            return Some(KindSchema {
                namespaced: c.namespaced,
                root: c.root.clone(),
                bundle: self.bundle.clone(),
                compiled: CompiledRoot::Crd(c.compiled.clone()),
            });
        }
        let (i, k) = self.bundle.kind(api_version, kind)?;
        Some(KindSchema {
            namespaced: k.namespaced,
            root: self.bundle.kind_root(i, k.def_key),
            bundle: self.bundle.clone(),
            compiled: CompiledRoot::Bundled(k.def_key),
        })
    }
}

/// The schema of one kind, with `$ref`s resolvable against the bundled definitions.
#[derive(Debug, Clone)]
pub struct KindSchema {
    /// Whether objects of this kind live in a namespace.
    pub namespaced: bool,
    root: Arc<Value>,
    bundle: Arc<Bundle>,
    compiled: CompiledRoot,
}

/// Where a kind's compiled root is kept: with the bundle (a built-in kind, by `$defs` key) or
/// with the CRD it came from.
#[derive(Debug, Clone)]
enum CompiledRoot {
    Bundled(&'static str),
    Crd(Arc<OnceLock<compiled::Compiled>>),
}

/// What a field path designates in a kind's schema.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldLookup {
    /// The field exists; its schema node with `$ref`s and `allOf` at the top resolved.
    Schema(Value),
    /// The segment at index `at` of the path does not exist in the schema.
    Unknown {
        /// Index of the first unknown segment.
        at: usize,
    },
    /// The path goes below a node that accepts any content
    /// (`x-kubernetes-preserve-unknown-fields`, a free-form object).
    Anything,
}

/// [`FieldLookup`], the node borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldRef<'a> {
    /// The field exists; its schema node with `$ref`s and `allOf` at the top resolved.
    Schema(&'a Value),
    /// The segment at index `at` of the path does not exist in the schema.
    Unknown {
        /// Index of the first unknown segment.
        at: usize,
    },
    /// The path goes below a node that accepts any content.
    Anything,
}

impl FieldRef<'_> {
    /// The [`FieldLookup`] that owns a copy of the node.
    pub fn to_owned(self) -> FieldLookup {
        match self {
            FieldRef::Schema(v) => FieldLookup::Schema(v.clone()),
            FieldRef::Unknown { at } => FieldLookup::Unknown { at },
            FieldRef::Anything => FieldLookup::Anything,
        }
    }
}

impl KindSchema {
    /// The root node of the kind, for the type checker.
    pub fn node(&self) -> SchemaNode {
        SchemaNode::new(self.bundle.clone(), &self.root, true)
    }

    /// The schema at a field path, following `$ref`/`allOf`, `items` and `additionalProperties`.
    /// `metadata` is ObjectMeta and `apiVersion`/`kind` are strings for every kind.
    pub fn field(&self, path: &FieldPath) -> FieldLookup {
        self.field_with(path, |f| f.to_owned())
    }

    /// [`KindSchema::field`], the node lent to `f` rather than copied: a caller that reads a
    /// keyword or two of a node (a definition can be tens of kilobytes) asks this.
    pub fn field_with<R>(&self, path: &FieldPath, f: impl FnOnce(FieldRef<'_>) -> R) -> R {
        walk::field(&self.bundle, &self.root, path, f)
    }

    /// Check a literal template value against the schema the way kro does before it evaluates
    /// anything: unknown fields (`schema not found for field foo`) and scalar type mismatches
    /// (`expected integer type for path spec.replicas, got string`). Strings containing `${` are
    /// expressions, typed elsewhere, and skipped. Returns `(path, message)` in document order.
    pub fn check_literal(&self, value: &Value) -> Vec<(FieldPath, String)> {
        let mut out = Vec::new();
        walk::check(
            &self.bundle,
            &self.root,
            value,
            &FieldPath::root(),
            false,
            &mut out,
        );
        out
    }

    /// [`KindSchema::check_literal`] for a rendered object, in one walk of the schema: also
    /// every string at a node with an `enum` must be one of its values (`imagePullPolicy`,
    /// `Service.spec.type`), strings holding `${` included, since a rendered object has no
    /// expressions left. Returns `(path, message)` in document order.
    pub fn check_rendered(&self, value: &Value) -> Vec<(FieldPath, String)> {
        let mut out = Vec::new();
        let b = &self.bundle;
        match &self.compiled {
            CompiledRoot::Bundled(k) => match b.compiled_def(k) {
                Some(c) => compiled::check(b, c, value, &mut out),
                // Not reached: every kind of the bundle names a definition of it.
                None => walk::check(b, &self.root, value, &FieldPath::root(), true, &mut out),
            },
            CompiledRoot::Crd(c) => {
                let c = c.get_or_init(|| compiled::root(b, &self.root));
                compiled::check(b, c, value, &mut out)
            }
        }
        out
    }
}
