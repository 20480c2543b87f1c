//! Routes from an endpoint's API schema, for `workload.toEndpointResources(name)`: what upstream's
//! `internal/pipeline/component/schemaextract` computes (commit ad3f5030). An OpenAPI document
//! gives one `{kind: HTTP, method, path}` per path and operation; protobuf source gives one
//! `{kind: gRPC, service, method}` per service method (the service name package-qualified). The
//! list is sorted by kind, service, path, method.
//!
//! Upstream's extraction is best effort: a schema it cannot read gives no routes (templates fall
//! back to catch-all routing) and a log line. Here the reason is returned, for a warning.

use serde_json::{json, Value};

/// The schema format an endpoint's `schema.type` names, else the one its protocol implies
/// (upstream's `normalizeSchemaType` and `inferenceByEndpointType`).
fn schema_type(declared: &str, endpoint_type: &str) -> Option<String> {
    let t = declared.trim().to_ascii_lowercase();
    Some(
        match t.as_str() {
            "" => match endpoint_type {
                "HTTP" => "openapi",
                "gRPC" => "proto",
                "GraphQL" => "graphql",
                // TCP, UDP, Websocket…: nothing to extract, and nothing to warn about.
                _ => return None,
            },
            "openapi" | "openapiv3" | "oas" | "oas3" | "swagger" => "openapi",
            "proto" | "protobuf" | "grpc" => "proto",
            "graphql" | "gql" => "graphql",
            other => return Some(other.to_string()),
        }
        .to_string(),
    )
}

/// The routes of one endpoint (`{type, schema: {type, content}}` of a Workload). `Ok(vec![])`
/// when there is nothing to extract; `Err(reason)` when upstream would log a failure (and also
/// render no routes).
pub(crate) fn extract(endpoint: &Value) -> Result<Vec<Value>, String> {
    let content = endpoint
        .pointer("/schema/content")
        .and_then(Value::as_str)
        .unwrap_or("");
    if content.trim().is_empty() {
        return Ok(Vec::new());
    }
    let declared = endpoint
        .pointer("/schema/type")
        .and_then(Value::as_str)
        .unwrap_or("");
    let ep_type = endpoint.get("type").and_then(Value::as_str).unwrap_or("");
    let Some(st) = schema_type(declared, ep_type) else {
        return Ok(Vec::new());
    };
    let mut routes = match st.as_str() {
        "openapi" => openapi(content).map_err(|e| format!("OpenAPI schema: {e}"))?,
        "proto" => proto(content).map_err(|e| format!("proto schema: {e}"))?,
        other => return Err(format!("no extractor for schema type {other:?}")),
    };
    let key = |r: &Value, k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    routes.sort_by_key(|r| {
        (
            key(r, "kind"),
            key(r, "service"),
            key(r, "path"),
            key(r, "method"),
        )
    });
    Ok(routes)
}

/// The operations of an OpenAPI path item (kin-openapi's `PathItem.Operations`).
const OPERATIONS: &[&str] = &[
    "connect", "delete", "get", "head", "options", "patch", "post", "put", "trace",
];

/// OpenAPI (JSON or YAML): one route per path and operation. Upstream loads the document with
/// kin-openapi without validating it and without external references; a document that does not
/// parse, or whose `$ref`s do not resolve inside it, gives no routes.
fn openapi(content: &str) -> Result<Vec<Value>, String> {
    let docs = crate::document::parse_yaml_reference(
        "schema",
        content,
        &crate::document::YamlLimits::default(),
    )
    .map_err(|d| d.message)?;
    let doc = match docs.as_slice() {
        [d] => d,
        [] => return Err("empty document".into()),
        _ => return Err("more than one YAML document".into()),
    };
    if !doc.is_object() {
        return Err("the document is not a map".into());
    }
    check_refs(doc, doc)?;
    let mut out = Vec::new();
    let Some(paths) = doc.get("paths").and_then(Value::as_object) else {
        return Ok(out);
    };
    for (path, item) in paths {
        // `x-…` keys of `paths` are extensions, not paths.
        if path.starts_with("x-") {
            continue;
        }
        let item = match item.get("$ref").and_then(Value::as_str) {
            Some(r) => {
                resolve_local(doc, r).ok_or_else(|| format!("$ref {r:?} does not resolve"))?
            }
            None => item,
        };
        for op in OPERATIONS {
            if item.get(*op).is_some_and(|o| !o.is_null()) {
                out.push(json!({"kind": "HTTP", "method": op.to_ascii_uppercase(), "path": path}));
            }
        }
    }
    Ok(out)
}

/// Every `$ref` must point into the document (`#/…`): upstream's loader refuses external
/// references while rendering.
fn check_refs(root: &Value, v: &Value) -> Result<(), String> {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref") {
                if resolve_local(root, r).is_none() {
                    return Err(format!(
                        "$ref {r:?} does not resolve inside the document (external references are not loaded)"
                    ));
                }
            }
            m.values().try_for_each(|x| check_refs(root, x))
        }
        Value::Array(a) => a.iter().try_for_each(|x| check_refs(root, x)),
        _ => Ok(()),
    }
}

fn resolve_local<'v>(root: &'v Value, r: &str) -> Option<&'v Value> {
    let pointer = r.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    // JSON Pointer inside a URI fragment: `~1`/`~0` escapes, and percent-encoding.
    let decoded = crate::percent::decode(pointer)?;
    root.pointer(&decoded)
}

/// Messages of the well-known files upstream's compiler resolves (`WithStandardImports`).
fn well_known(file: &str) -> Option<&'static [&'static str]> {
    Some(match file {
        "google/protobuf/any.proto" => &["Any"],
        "google/protobuf/api.proto" => &["Api", "Method", "Mixin"],
        "google/protobuf/duration.proto" => &["Duration"],
        "google/protobuf/empty.proto" => &["Empty"],
        "google/protobuf/field_mask.proto" => &["FieldMask"],
        "google/protobuf/source_context.proto" => &["SourceContext"],
        "google/protobuf/struct.proto" => &["Struct", "Value", "ListValue"],
        "google/protobuf/timestamp.proto" => &["Timestamp"],
        "google/protobuf/type.proto" => &["Type", "Field", "Enum", "EnumValue", "Option"],
        "google/protobuf/wrappers.proto" => &[
            "DoubleValue",
            "FloatValue",
            "Int64Value",
            "UInt64Value",
            "Int32Value",
            "UInt32Value",
            "BoolValue",
            "StringValue",
            "BytesValue",
        ],
        "google/protobuf/descriptor.proto" => &[
            "FileDescriptorSet",
            "FileDescriptorProto",
            "DescriptorProto",
            "FieldDescriptorProto",
            "OneofDescriptorProto",
            "EnumDescriptorProto",
            "EnumValueDescriptorProto",
            "ServiceDescriptorProto",
            "MethodDescriptorProto",
            "FileOptions",
            "MessageOptions",
            "FieldOptions",
            "OneofOptions",
            "EnumOptions",
            "EnumValueOptions",
            "ServiceOptions",
            "MethodOptions",
            "UninterpretedOption",
            "SourceCodeInfo",
            "GeneratedCodeInfo",
        ],
        _ => return None,
    })
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Num,
    Sym(char),
}

fn tokenize(src: &str) -> Result<Vec<Tok>, String> {
    let c: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            i += 2;
            loop {
                if i + 1 >= c.len() {
                    return Err("unterminated comment".into());
                }
                if c[i] == '*' && c[i + 1] == '/' {
                    i += 2;
                    break;
                }
                i += 1;
            }
        } else if ch == '"' || ch == '\'' {
            let mut s = String::new();
            i += 1;
            loop {
                match c.get(i) {
                    None | Some('\n') => return Err("unterminated string".into()),
                    Some(&q) if q == ch => break,
                    Some('\\') => {
                        s.push(*c.get(i + 1).ok_or("unterminated string")?);
                        i += 2;
                    }
                    Some(&x) => {
                        s.push(x);
                        i += 1;
                    }
                }
            }
            i += 1;
            out.push(Tok::Str(s));
        } else if ch.is_ascii_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '.' || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Num);
        } else if "{}()[]<>;=,.:-+".contains(ch) {
            out.push(Tok::Sym(ch));
            i += 1;
        } else {
            return Err(format!("unexpected character {ch:?}"));
        }
    }
    Ok(out)
}

/// One rpc of a service: its name, request and response type names.
type Rpc = (String, String, String);

struct Proto {
    toks: Vec<Tok>,
    pos: usize,
}

impl Proto {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }
    fn ident(&mut self, what: &str) -> Result<String, String> {
        match self.next() {
            Some(Tok::Ident(s)) => Ok(s),
            _ => Err(format!("expected {what}")),
        }
    }
    fn sym(&mut self, s: char) -> Result<(), String> {
        match self.next() {
            Some(Tok::Sym(x)) if x == s => Ok(()),
            _ => Err(format!("expected {s:?}")),
        }
    }
    /// A possibly dotted (and possibly fully qualified) name.
    fn dotted(&mut self, what: &str) -> Result<String, String> {
        let mut s = String::new();
        if self.peek() == Some(&Tok::Sym('.')) {
            self.pos += 1;
            s.push('.');
        }
        s.push_str(&self.ident(what)?);
        while self.peek() == Some(&Tok::Sym('.')) {
            self.pos += 1;
            s.push('.');
            s.push_str(&self.ident(what)?);
        }
        Ok(s)
    }
    /// Up to and including the next `;` at this nesting level.
    fn skip_statement(&mut self) -> Result<(), String> {
        let mut depth = 0i32;
        loop {
            match self.next() {
                None => return Err("unexpected end of file".into()),
                Some(Tok::Sym('{' | '[' | '(')) => depth += 1,
                Some(Tok::Sym('}' | ']' | ')')) => depth -= 1,
                Some(Tok::Sym(';')) if depth == 0 => return Ok(()),
                _ => {}
            }
            if depth < 0 {
                return Err("unbalanced brackets".into());
            }
        }
    }
    /// A `{…}` body, collecting the full names of the messages and enums declared in it.
    fn body(&mut self, scope: &str, types: &mut Vec<(String, bool)>) -> Result<(), String> {
        self.sym('{')?;
        // `message`/`enum` declare a type only at the start of a statement (a field may be
        // called `message`).
        let mut at_start = true;
        loop {
            match self.next() {
                None => return Err("unexpected end of file".into()),
                Some(Tok::Sym('}')) => return Ok(()),
                Some(Tok::Sym('{')) => {
                    // A oneof, an option value or another block without a type in it.
                    self.pos -= 1;
                    self.body(scope, &mut Vec::new())?;
                    at_start = true;
                }
                Some(Tok::Ident(k)) if at_start && (k == "message" || k == "enum") => {
                    let name = self.ident("a name")?;
                    let full = format!("{scope}.{name}");
                    types.push((full.clone(), k == "message"));
                    self.body(&full, types)?;
                    at_start = true;
                }
                Some(Tok::Sym(';')) => at_start = true,
                _ => at_start = false,
            }
        }
    }
}

/// Protobuf source (one file; only the well-known imports resolve, as upstream's compiler is
/// set up): one route per service method, the service name package-qualified. kiln reads the
/// file's structure (package, imports, messages, enums, services) and checks that each method's
/// request and response types resolve to a message, which is what a compile needs of what the
/// routes are made from; it does not re-check every rule of protobuf compilation (field numbers,
/// options), so a file only those would break gives routes here and none upstream.
fn proto(content: &str) -> Result<Vec<Value>, String> {
    let mut p = Proto {
        toks: tokenize(content)?,
        pos: 0,
    };
    let mut package = String::new();
    let mut types: Vec<(String, bool)> = Vec::new();
    let mut services: Vec<(String, Vec<Rpc>)> = Vec::new();
    while let Some(t) = p.next() {
        match t {
            Tok::Sym(';') => {}
            Tok::Ident(k) => match k.as_str() {
                "syntax" | "edition" | "option" => p.skip_statement()?,
                "package" => {
                    package = p.dotted("a package name")?;
                    p.sym(';')?;
                }
                "import" => {
                    if matches!(p.peek(), Some(Tok::Ident(m)) if m == "public" || m == "weak") {
                        p.pos += 1;
                    }
                    let Some(Tok::Str(file)) = p.next() else {
                        return Err("expected the imported file's name".into());
                    };
                    let Some(msgs) = well_known(&file) else {
                        return Err(format!(
                            "import {file:?} cannot be resolved (only the schema itself and protobuf's well-known types are)"
                        ));
                    };
                    types.extend(msgs.iter().map(|m| (format!(".google.protobuf.{m}"), true)));
                    p.sym(';')?;
                }
                "message" | "enum" => {
                    let name = p.ident("a name")?;
                    let full = if package.is_empty() {
                        format!(".{name}")
                    } else {
                        format!(".{package}.{name}")
                    };
                    types.push((full.clone(), k == "message"));
                    p.body(&full, &mut types)?;
                }
                "extend" => {
                    p.dotted("a message name")?;
                    p.body("", &mut Vec::new())?;
                }
                "service" => {
                    let name = p.ident("a service name")?;
                    p.sym('{')?;
                    let mut methods = Vec::new();
                    loop {
                        match p.next() {
                            None => return Err("unexpected end of file".into()),
                            Some(Tok::Sym('}')) => break,
                            Some(Tok::Sym(';')) => {}
                            Some(Tok::Ident(k)) if k == "option" => p.skip_statement()?,
                            Some(Tok::Ident(k)) if k == "rpc" => {
                                let m = p.ident("a method name")?;
                                let mut io = Vec::new();
                                for kw in [None, Some("returns")] {
                                    if let Some(kw) = kw {
                                        if p.ident("returns")? != kw {
                                            return Err(format!(
                                                "expected returns after {m}'s request"
                                            ));
                                        }
                                    }
                                    p.sym('(')?;
                                    if matches!(p.peek(), Some(Tok::Ident(s)) if s == "stream")
                                        && matches!(
                                            p.toks.get(p.pos + 1),
                                            Some(Tok::Ident(_) | Tok::Sym('.'))
                                        )
                                    {
                                        p.pos += 1;
                                    }
                                    io.push(p.dotted("a message type")?);
                                    p.sym(')')?;
                                }
                                match p.peek() {
                                    Some(Tok::Sym(';')) => p.pos += 1,
                                    Some(Tok::Sym('{')) => p.body("", &mut Vec::new())?,
                                    _ => return Err(format!("expected ; or {{ after rpc {m}")),
                                }
                                methods.push((m, io[0].clone(), io[1].clone()));
                            }
                            _ => return Err(format!("unexpected token in service {name}")),
                        }
                    }
                    services.push((name, methods));
                }
                other => return Err(format!("unexpected {other:?} at the top level")),
            },
            _ => return Err("unexpected token at the top level".into()),
        }
    }
    let resolve = |name: &str| -> Option<bool> {
        let lookup = |full: &str| types.iter().find(|(n, _)| n == full).map(|(_, m)| *m);
        if name.starts_with('.') {
            return lookup(name);
        }
        // Relative names are looked up from the innermost scope outwards.
        let mut scope: Vec<&str> = package.split('.').filter(|s| !s.is_empty()).collect();
        loop {
            let full = if scope.is_empty() {
                format!(".{name}")
            } else {
                format!(".{}.{name}", scope.join("."))
            };
            if let Some(m) = lookup(&full) {
                return Some(m);
            }
            scope.pop()?;
        }
    };
    let mut out = Vec::new();
    for (svc, methods) in &services {
        let full = if package.is_empty() {
            svc.clone()
        } else {
            format!("{package}.{svc}")
        };
        for (m, req, resp) in methods {
            for t in [req, resp] {
                match resolve(t) {
                    Some(true) => {}
                    Some(false) => {
                        return Err(format!("{full}.{m}: {t} is an enum, not a message"))
                    }
                    None => return Err(format!("{full}.{m}: message type {t} is not defined")),
                }
            }
            out.push(json!({"kind": "gRPC", "service": full, "method": m}));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(ty: &str, schema_type: &str, content: &str) -> Value {
        json!({"type": ty, "schema": {"type": schema_type, "content": content}})
    }

    /// The reading-list schema of upstream's `samples/component-types/component-http-openapi-service`:
    /// one route per (path, operation), sorted by path then method (`sortResources`).
    #[test]
    fn openapi_routes_per_path_and_operation() {
        let content = "openapi: 3.0.1\ninfo: {title: t, version: '1'}\npaths:\n  /books/{id}:\n    parameters: []\n    summary: s\n    get: {responses: {}}\n    delete: {responses: {}}\n    put: {responses: {}}\n  /books:\n    post: {responses: {}}\n    get: {responses: {}}\n  x-ext: {get: {}}\n";
        let got = extract(&ep("HTTP", "openapi", content)).unwrap();
        let routes: Vec<String> = got
            .iter()
            .map(|r| format!("{} {} {}", r["kind"], r["method"], r["path"]))
            .collect();
        assert_eq!(
            routes,
            [
                r#""HTTP" "GET" "/books""#,
                r#""HTTP" "POST" "/books""#,
                r#""HTTP" "DELETE" "/books/{id}""#,
                r#""HTTP" "GET" "/books/{id}""#,
                r#""HTTP" "PUT" "/books/{id}""#,
            ]
        );
        assert!(
            got[0].get("service").is_none(),
            "omitempty, as upstream's JSON tags"
        );
    }

    /// JSON content, the type inferred from an HTTP endpoint (upstream's inferenceByEndpointType).
    #[test]
    fn openapi_json_and_inferred_type() {
        let content = r#"{"openapi": "3.0.0", "paths": {"/a": {"get": {}}}}"#;
        let got = extract(&ep("HTTP", "", content)).unwrap();
        assert_eq!(
            got,
            vec![json!({"kind": "HTTP", "method": "GET", "path": "/a"})]
        );
    }

    /// Best effort as upstream: an unparseable document or an external $ref gives no routes and
    /// a reason; a TCP endpoint or a blank schema gives none and no reason.
    #[test]
    fn openapi_failures_and_nothing_to_extract() {
        assert!(extract(&ep("HTTP", "openapi", "paths: [")).is_err());
        let ext = "openapi: 3.0.0\npaths:\n  /a:\n    get:\n      responses: {'200': {$ref: 'other.yaml#/x'}}\n";
        assert!(extract(&ep("HTTP", "openapi", ext)).is_err());
        let local = "openapi: 3.0.0\ncomponents: {responses: {ok: {description: d}}}\npaths:\n  /a:\n    get:\n      responses: {'200': {$ref: '#/components/responses/ok'}}\n";
        assert_eq!(extract(&ep("HTTP", "openapi", local)).unwrap().len(), 1);
        assert_eq!(
            extract(&ep("TCP", "", "whatever")).unwrap(),
            Vec::<Value>::new()
        );
        assert_eq!(
            extract(&ep("HTTP", "openapi", "  ")).unwrap(),
            Vec::<Value>::new()
        );
        assert!(extract(&ep("HTTP", "graphql", "type Query {a: Int}")).is_err());
    }

    /// The greeter schema of upstream's `samples/component-types/component-grpc-service`, plus a
    /// streaming method, a nested message, a well-known import and comments.
    #[test]
    fn proto_routes_per_service_method() {
        let content = r#"
syntax = "proto3";
package greeter.v1; // the package qualifies the service
import "google/protobuf/empty.proto";
/* two services */
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply);
  rpc Stream (stream HelloRequest) returns (stream Outer.Inner) { option deprecated = true; }
}
service Admin { rpc Ping (google.protobuf.Empty) returns (.greeter.v1.HelloReply); }
message HelloRequest { string name = 1; map<string, int32> m = 2; }
message HelloReply  { string message = 1; }
message Outer { message Inner { string s = 1; } enum E { A = 0; } }
"#;
        let got = extract(&ep("gRPC", "", content)).unwrap();
        let routes: Vec<String> = got
            .iter()
            .map(|r| format!("{} {}", r["service"], r["method"]))
            .collect();
        assert_eq!(
            routes,
            [
                r#""greeter.v1.Admin" "Ping""#,
                r#""greeter.v1.Greeter" "SayHello""#,
                r#""greeter.v1.Greeter" "Stream""#,
            ]
        );
        assert!(got[0].get("path").is_none());
    }

    /// What upstream's compiler rejects, and so gives no routes: an import other than the
    /// well-known types, an undefined or enum request type, a syntax error.
    #[test]
    fn proto_failures() {
        let svc = "syntax = \"proto3\";\nservice S { rpc M (Req) returns (Req); }\n";
        assert!(extract(&ep("gRPC", "proto", svc)).is_err());
        let imp = "syntax = \"proto3\";\nimport \"common/types.proto\";\nmessage Req {}\nservice S { rpc M (Req) returns (Req); }\n";
        assert!(extract(&ep("gRPC", "proto", imp)).is_err());
        let en =
            "syntax = \"proto3\";\nenum Req { A = 0; }\nservice S { rpc M (Req) returns (Req); }\n";
        assert!(extract(&ep("gRPC", "proto", en)).is_err());
        assert!(extract(&ep("gRPC", "proto", "service S {")).is_err());
        let ok = "syntax = \"proto3\";\nmessage Req {}\nservice S { rpc M (Req) returns (Req); }\n";
        assert_eq!(
            extract(&ep("gRPC", "proto", ok)).unwrap(),
            vec![json!({"kind": "gRPC", "service": "S", "method": "M"})]
        );
    }
}
