//! `parameters.yaml` and package metadata: the `kurel:` key (design) or a `kurel.yaml` file (the
//! prototype's form).

use serde_json::{Map, Value};

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::Document;
use crate::fieldpath::FieldPath;
use crate::names::is_dns1123_label as is_dns_label;

/// A package maintainer.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Maintainer {
    /// Name.
    pub name: String,
    /// E-mail address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Web page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Where the metadata came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum MetadataSource {
    /// The `kurel:` key of `parameters.yaml` (the design).
    Parameters,
    /// A separate `kurel.yaml` (the prototype).
    KurelYaml,
}

/// Package metadata.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// Package name: lowercase DNS label.
    pub name: String,
    /// Package version: semantic version.
    pub version: String,
    /// Version of the packaged application (required by the design; the prototype's
    /// `kurel.yaml` often lacks it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub app_version: Option<String>,
    /// One-line description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Home page (http or https URL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub home: Option<String>,
    /// Search keywords.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// Maintainers.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// CRD schema URLs (recorded; kiln never fetches them: rendering is offline).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub schemas: Vec<String>,
    /// Where it was read from.
    pub source: MetadataSource,
}

impl Metadata {
    /// The metadata as the `kurel` parameter map, so `${kurel.version}` resolves.
    pub fn as_parameter(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert("version".into(), Value::String(self.version.clone()));
        if let Some(a) = &self.app_version {
            m.insert("appVersion".into(), Value::String(a.clone()));
        }
        if let Some(d) = &self.description {
            m.insert("description".into(), Value::String(d.clone()));
        }
        if let Some(h) = &self.home {
            m.insert("home".into(), Value::String(h.clone()));
        }
        if !self.keywords.is_empty() {
            m.insert(
                "keywords".into(),
                Value::Array(self.keywords.iter().cloned().map(Value::String).collect()),
            );
        }
        if !self.maintainers.is_empty() {
            m.insert(
                "maintainers".into(),
                serde_json::to_value(&self.maintainers).unwrap_or(Value::Null),
            );
        }
        if !self.schemas.is_empty() {
            m.insert(
                "schemas".into(),
                Value::Array(self.schemas.iter().cloned().map(Value::String).collect()),
            );
        }
        Value::Object(m)
    }
}

const KNOWN_KEYS: &[&str] = &[
    "name",
    "version",
    "appVersion",
    "description",
    "home",
    "keywords",
    "maintainers",
    "schemas",
];

/// Semantic version 2.0.0 (no leading `v`).
pub fn is_semver(s: &str) -> bool {
    let (core, rest) = match s.find(['-', '+']) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let nums: Vec<&str> = core.split('.').collect();
    let num_ok = |n: &&str| {
        !n.is_empty()
            && n.bytes().all(|c| c.is_ascii_digit())
            && (n.len() == 1 || !n.starts_with('0'))
    };
    if nums.len() != 3 || !nums.iter().all(num_ok) {
        return false;
    }
    let ident_ok = |part: &str| {
        !part.is_empty()
            && part.split('.').all(|id| {
                !id.is_empty() && id.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
            })
    };
    let (pre, build) = match rest.find('+') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let pre_ok = match pre.strip_prefix('-') {
        Some(p) => ident_ok(p),
        None => pre.is_empty(),
    };
    pre_ok && build.is_none_or(ident_ok)
}

fn is_http_url(s: &str) -> bool {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"));
    matches!(rest, Some(r) if !r.is_empty() && !r.starts_with('/') && !r.contains(char::is_whitespace))
}

fn is_email(s: &str) -> bool {
    match s.split_once('@') {
        Some((user, host)) => {
            !user.is_empty()
                && host.contains('.')
                && !host.starts_with('.')
                && !host.ends_with('.')
                && !s.contains(char::is_whitespace)
        }
        None => false,
    }
}

/// Read metadata from a mapping (`kurel:` of parameters.yaml at `base`, or the root of
/// kurel.yaml). Errors and warnings go to `diags`; returns the metadata if it is usable.
pub fn parse_metadata(
    doc: &Document,
    map: &Map<String, Value>,
    base: &FieldPath,
    source: MetadataSource,
    diags: &mut Diagnostics,
) -> Option<Metadata> {
    let err = |p: &FieldPath, msg: String, hint: &str| {
        doc.diag(
            Diagnostic::error(codes::KUREL_METADATA, msg).with_hint(hint),
            p,
        )
    };
    let before = diags.0.iter().filter(|d| d.is_error()).count();
    let where_ = match source {
        MetadataSource::Parameters => "kurel",
        MetadataSource::KurelYaml => "kurel.yaml",
    };
    let string = |k: &str, diags: &mut Diagnostics| -> Option<String> {
        match map.get(k) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                diags.push(err(
                    &base.key(k),
                    format!("{where_} {k} must be a string, got {other}"),
                    "quote the value, e.g. version: \"1.0.0\"",
                ));
                None
            }
        }
    };
    let name = string("name", diags);
    let version = string("version", diags);
    let app_version = string("appVersion", diags);
    let description = string("description", diags);
    let home = string("home", diags);
    match &name {
        None if !map.contains_key("name") => diags.push(err(
            base,
            format!("{where_} has no name"),
            "add name: my-app (lowercase letters, digits and -)",
        )),
        Some(n) if !is_dns_label(n) => diags.push(err(
            &base.key("name"),
            format!("package name {n:?} is not a DNS label"),
            "use 1–63 lowercase letters, digits and -, starting and ending with a letter or digit",
        )),
        _ => {}
    }
    match &version {
        None if !map.contains_key("version") => diags.push(err(
            base,
            format!("{where_} has no version"),
            "add version: 1.0.0 (a semantic version)",
        )),
        Some(v) if !is_semver(v) => {
            let hint = if v.starts_with('v') && is_semver(&v[1..]) {
                "drop the leading v: versions are written 1.2.3"
            } else {
                "use a semantic version such as 1.2.3 or 1.2.3-rc.1"
            };
            diags.push(err(
                &base.key("version"),
                format!("version {v:?} is not a semantic version"),
                hint,
            ))
        }
        _ => {}
    }
    if app_version.is_none() && !map.contains_key("appVersion") {
        match source {
            MetadataSource::Parameters => diags.push(err(
                base,
                "kurel has no appVersion".into(),
                "add appVersion: the version of the packaged application, e.g. \"1.4.0\"",
            )),
            // The prototype did not know appVersion; its packages still load.
            MetadataSource::KurelYaml => diags.push(
                doc.diag(
                    Diagnostic::warning(
                        codes::KUREL_METADATA_WARNING,
                        "kurel.yaml has no appVersion; ${kurel.appVersion} is undefined",
                    )
                    .with_hint(
                        "add appVersion, or move the metadata under kurel: in parameters.yaml",
                    ),
                    base,
                ),
            ),
        }
    }
    if let Some(h) = &home {
        if !is_http_url(h) {
            diags.push(err(
                &base.key("home"),
                format!("home {h:?} is not an http(s) URL"),
                "write home: https://example.com/my-app",
            ));
        }
    }
    let strings = |k: &str, diags: &mut Diagnostics| -> Vec<String> {
        match map.get(k) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .filter_map(|(i, v)| match v {
                    Value::String(s) => Some(s.clone()),
                    other => {
                        diags.push(err(
                            &base.key(k).index(i),
                            format!("{k} entries must be strings, got {other}"),
                            "quote the entry",
                        ));
                        None
                    }
                })
                .collect(),
            Some(other) => {
                diags.push(err(
                    &base.key(k),
                    format!("{k} must be a list of strings, got {other}"),
                    "write it as a YAML list",
                ));
                Vec::new()
            }
        }
    };
    let keywords = strings("keywords", diags);
    let schemas = strings("schemas", diags);
    for (i, s) in schemas.iter().enumerate() {
        if !is_http_url(s) {
            diags.push(err(
                &base.key("schemas").index(i),
                format!("schema {s:?} is not an http(s) URL"),
                "list CRD schema URLs (kiln records them but never downloads them)",
            ));
        }
    }
    let mut maintainers = Vec::new();
    match map.get("maintainers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, m) in items.iter().enumerate() {
                let p = base.key("maintainers").index(i);
                let get = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
                match (m.as_object(), get("name")) {
                    (Some(_), Some(name)) => {
                        let email = get("email");
                        if let Some(e) = &email {
                            if !is_email(e) {
                                diags.push(err(
                                    &p.key("email"),
                                    format!("{e:?} is not an e-mail address"),
                                    "write name@example.com",
                                ));
                            }
                        }
                        maintainers.push(Maintainer {
                            name,
                            email,
                            url: get("url"),
                        });
                    }
                    _ => diags.push(err(
                        &p,
                        "a maintainer needs a name".into(),
                        "write - {name: Jane Doe, email: jane@example.com}",
                    )),
                }
            }
        }
        Some(_) => diags.push(err(
            &base.key("maintainers"),
            "maintainers must be a list".into(),
            "write maintainers: [{name: Jane Doe, email: jane@example.com}]",
        )),
    }
    for k in map.keys() {
        if !KNOWN_KEYS.contains(&k.as_str()) {
            diags.push(
                doc.diag(
                    Diagnostic::warning(
                        codes::KUREL_METADATA_WARNING,
                        format!("unknown metadata key {k:?} is ignored"),
                    )
                    .with_hint(format!("known keys: {}", KNOWN_KEYS.join(", "))),
                    &base.key(k),
                ),
            );
        }
    }
    let after = diags.0.iter().filter(|d| d.is_error()).count();
    if after > before {
        return None;
    }
    Some(Metadata {
        name: name?,
        version: version?,
        app_version,
        description,
        home,
        keywords,
        maintainers,
        schemas,
        source,
    })
}

/// Warn about values that look like another templating language: they are not kurel variables
/// and would be written out literally.
pub fn warn_foreign_templates(doc: &Document, v: &Value, at: &FieldPath, diags: &mut Diagnostics) {
    match v {
        Value::String(s) if s.contains("{{") && s.contains("}}") => diags.push(
            doc.diag(
                Diagnostic::warning(
                    codes::KUREL_PROTOTYPE,
                    format!("{s:?} looks like a Go template; kurel does not evaluate {{{{ }}}}"),
                )
                .with_hint("kurel variables are written ${path}"),
                at,
            ),
        ),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                warn_foreign_templates(doc, x, &at.index(i), diags);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                warn_foreign_templates(doc, x, &at.key(k), diags);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn semver() {
        for ok in [
            "1.0.0",
            "0.12.0",
            "1.2.3-rc.1",
            "1.2.3+build.5",
            "10.20.30-alpha-1",
        ] {
            assert!(is_semver(ok), "{ok}");
        }
        for bad in [
            "v1.0.0",
            "1.0",
            "01.2.3",
            "1.2.3-",
            "invalid-version",
            "1.2.3+",
        ] {
            assert!(!is_semver(bad), "{bad}");
        }
    }

    #[test]
    fn names_urls_emails() {
        assert!(is_dns_label("my-app"));
        assert!(!is_dns_label("My-App"));
        assert!(!is_dns_label("-x"));
        assert!(is_http_url("https://example.com/x"));
        assert!(!is_http_url("ftp://example.com"));
        assert!(is_email("a@b.io"));
        assert!(!is_email("a@b"));
    }
}
