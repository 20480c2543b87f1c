//! `--vars-from DIR`: the ConfigMaps and Secrets a Kustomization's `substituteFrom` names, read
//! from files instead of a cluster.
//!
//! Every `.yaml`/`.yml`/`.json` file under the directory is read (the directory is named by the
//! person running the build: read as given); documents of other kinds are ignored. A source
//! is found by kind and name, in the Kustomization's namespace when both it and the object
//! say one. A ConfigMap gives its `data`; a Secret its `data` decoded from base64, with
//! `stringData` over it (as the API server merges them).

use std::collections::BTreeMap;
use std::path::Path;

use kiln_core::diag::{codes, Diagnostic, Diagnostics};
use kiln_core::document::YamlLimits;
use kiln_core::flux::postbuild::{SourceKind, SourceRef};
use kiln_core::source::{load_inputs, Input};
use serde_json::Value;

/// The ConfigMaps and Secrets found, by kind, namespace and name.
#[derive(Debug, Default, Clone)]
pub struct Sources {
    found: BTreeMap<(SourceKind, Option<String>, String), BTreeMap<String, String>>,
}

impl Sources {
    /// Read every ConfigMap and Secret under `dir`.
    pub fn read(dir: &Path, limits: &YamlLimits) -> Result<Sources, Diagnostics> {
        let docs = load_inputs(&[Input::Path(dir.to_path_buf())], limits)?;
        let mut s = Sources::default();
        let mut errs = Diagnostics::new();
        for d in docs {
            let kind = match d.kind() {
                Some("ConfigMap") => SourceKind::ConfigMap,
                Some("Secret") => SourceKind::Secret,
                _ => continue,
            };
            let v = &d.value;
            let Some(name) = v.pointer("/metadata/name").and_then(Value::as_str) else {
                continue;
            };
            let ns = v
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .map(str::to_string);
            let mut data = BTreeMap::new();
            let mut bad = |field: &str, k: &str, why: &str| {
                errs.push(
                    Diagnostic::error(codes::FLUX_SUBSTITUTE_FROM, format!("{kind} {name}: {why}"))
                        .in_document(d.file(), d.index)
                        .at(format!("{field}.{k}"))
                        .with_hint(
                            "substituteFrom reads string values (a Secret's data base64-encoded)",
                        ),
                )
            };
            if let Some(m) = v.get("data").and_then(Value::as_object) {
                for (k, val) in m {
                    match (kind, val.as_str()) {
                        (_, None) => bad("data", k, "a value is not a string"),
                        (SourceKind::ConfigMap, Some(t)) => {
                            data.insert(k.clone(), t.to_string());
                        }
                        (SourceKind::Secret, Some(t)) => match kiln_core::base64::decode(t) {
                            Some(b) => match String::from_utf8(b) {
                                Ok(t) => {
                                    data.insert(k.clone(), t);
                                }
                                Err(_) => bad("data", k, "a decoded value is not UTF-8 text"),
                            },
                            None => bad("data", k, "a value is not valid base64"),
                        },
                    }
                }
            }
            if kind == SourceKind::Secret {
                if let Some(m) = v.get("stringData").and_then(Value::as_object) {
                    for (k, val) in m {
                        match val.as_str() {
                            Some(t) => {
                                data.insert(k.clone(), t.to_string());
                            }
                            None => bad("stringData", k, "a value is not a string"),
                        }
                    }
                }
            }
            s.found.insert((kind, ns, name.to_string()), data);
        }
        if errs.has_errors() {
            Err(errs)
        } else {
            Ok(s)
        }
    }

    /// The data of the source `r` names, in namespace `ns` (any namespace when either side
    /// sets none).
    pub fn lookup(&self, r: &SourceRef, ns: Option<&str>) -> Option<BTreeMap<String, String>> {
        self.found
            .iter()
            .find(|((k, n, name), _)| {
                *k == r.kind
                    && *name == r.name
                    && match (n.as_deref(), ns) {
                        (Some(a), Some(b)) => a == b,
                        _ => true,
                    }
            })
            .map(|(_, d)| d.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_configmaps_and_secrets_by_namespace() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("v.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars, namespace: flux-system}\ndata: {env: prod}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: creds}\ndata: {token: czNjcjN0}\nstringData: {user: me}\n",
        )
        .unwrap();
        let s = Sources::read(d.path(), &YamlLimits::default()).unwrap();
        let cm = SourceRef {
            kind: SourceKind::ConfigMap,
            name: "vars".into(),
            optional: false,
        };
        assert_eq!(s.lookup(&cm, Some("flux-system")).unwrap()["env"], "prod");
        assert!(s.lookup(&cm, Some("other")).is_none());
        let sec = SourceRef {
            kind: SourceKind::Secret,
            name: "creds".into(),
            optional: false,
        };
        let got = s.lookup(&sec, Some("flux-system")).unwrap();
        assert_eq!(got["token"], "s3cr3t");
        assert_eq!(got["user"], "me");
    }
}
