//! `kiln lsp`'s questions at a position, over stdio as an editor asks them: hover,
//! completion, definition, references, the outline and quick fixes on examples/webapp, with
//! exact ranges and contents in the protocol's UTF-16 positions.

use std::fs;
use std::path::PathBuf;

use kiln_test_support::lsp::{file_uri, Lsp};
use serde_json::{json, Value};

use crate::common::{root, KILN};
use crate::lsp::{span_of, webapp};

fn range((line, start, end): (u64, u64, u64)) -> Value {
    json!({"start": {"line": line, "character": start}, "end": {"line": line, "character": end}})
}

fn at(uri: &str, (line, character): (u64, u64)) -> Value {
    json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}})
}

/// A server on a copy of examples/webapp with its RGD open (as `text`, if given).
fn open_rgd(text: Option<&str>) -> (tempfile::TempDir, Lsp, String, String) {
    let (dir, ws) = webapp();
    let uri = file_uri(&ws.join("rgd.yaml"));
    let text = text
        .map(str::to_string)
        .unwrap_or_else(|| fs::read_to_string(ws.join("rgd.yaml")).unwrap());
    let (mut lsp, _) = Lsp::start(KILN, &ws);
    lsp.open(&uri, &text);
    (dir, lsp, uri, text)
}

fn rgd_text() -> String {
    fs::read_to_string(root().join("examples/webapp/rgd.yaml")).unwrap()
}

#[test]
fn hover_shows_an_expressions_type_and_the_fields_declaration() {
    let (_dir, mut lsp, uri, text) = open_rgd(None);
    let (line, start, end) = span_of(&text, "schema.spec.replicas", 0);
    let r = lsp.request("textDocument/hover", at(&uri, (line, start + 14)));
    let hover = &r["result"];
    assert_eq!(hover["range"], range((line, start, end)), "{r}");
    assert_eq!(hover["contents"]["kind"], "markdown");
    let md = hover["contents"]["value"].as_str().unwrap();
    assert!(
        md.starts_with("```\nint\n```")
            && md.contains("replicas: integer | default=2 minimum=1 maximum=20"),
        "{md}"
    );
    // A resource id: its kind and what it depends on.
    let (line, start, end) = span_of(&text, "deployment", 3);
    let r = lsp.request("textDocument/hover", at(&uri, (line, start + 1)));
    assert_eq!(r["result"]["range"], range((line, start, end)), "{r}");
    let md = r["result"]["contents"]["value"].as_str().unwrap();
    assert!(
        md.contains("**deployment**: `apps/v1` `Deployment`"),
        "{md}"
    );
    assert!(lsp.shutdown().success());
}

#[test]
fn completion_offers_the_kinds_fields_after_a_resource_id() {
    let text = rgd_text().replace(
        "replicas: ${schema.spec.replicas}",
        "replicas: ${deployment.spec.rep}",
    );
    let (_dir, mut lsp, uri, text) = open_rgd(Some(&text));
    let (line, _, end) = span_of(&text, "${deployment.spec.rep", 0);
    let r = lsp.request("textDocument/completion", at(&uri, (line, end)));
    let items = r["result"]
        .as_array()
        .or_else(|| r["result"]["items"].as_array())
        .unwrap_or_else(|| panic!("{r}"));
    let replicas = items
        .iter()
        .find(|i| i["label"] == "replicas")
        .unwrap_or_else(|| panic!("replicas offered: {r}"));
    assert_eq!(replicas["detail"], "int");
    // It replaces the part of the word typed so far.
    assert_eq!(
        replicas["textEdit"],
        json!({"range": range((line, end - 3, end)), "newText": "replicas"})
    );
    assert!(lsp.shutdown().success());
}

#[test]
fn definition_and_references_of_a_resource_id() {
    let (_dir, mut lsp, uri, text) = open_rgd(None);
    let id = span_of(&text, "id: deployment", 0);
    let declared = (id.0, id.1 + 4, id.2);
    let (line, start, _) = span_of(&text, "${deployment.metadata.name}", 0);
    let r = lsp.request("textDocument/definition", at(&uri, (line, start + 4)));
    assert_eq!(
        r["result"],
        json!([{"uri": uri, "range": range(declared)}]),
        "{r}"
    );
    let mut params = at(&uri, (declared.0, declared.1 + 1));
    params["context"] = json!({"includeDeclaration": true});
    let r = lsp.request("textDocument/references", params);
    let uses = [
        span_of(&text, "${deployment.status", 0),
        span_of(&text, "${deployment.metadata", 0),
        span_of(&text, "${deployment.spec", 0),
    ]
    .map(|(l, s, _)| json!({"uri": uri, "range": range((l, s + 2, s + 12))}));
    let mut want = vec![json!({"uri": uri, "range": range(declared)})];
    want.extend(uses);
    assert_eq!(r["result"], json!(want), "{r}");
    assert!(lsp.shutdown().success());
}

#[test]
fn an_instances_kind_goes_to_its_rgd() {
    let (_dir, ws) = webapp();
    let (rgd, instances) = (ws.join("rgd.yaml"), ws.join("instances.yaml"));
    let text = fs::read_to_string(&instances).unwrap();
    let (mut lsp, _) = Lsp::start(KILN, &ws);
    lsp.open(&file_uri(&instances), &text);
    let (line, start, _) = span_of(&text, "kind: WebApp", 0);
    let r = lsp.request(
        "textDocument/definition",
        at(&file_uri(&instances), (line, start + 7)),
    );
    let (l, s, e) = span_of(&fs::read_to_string(&rgd).unwrap(), "kind: WebApp", 0);
    assert_eq!(
        r["result"],
        json!([{"uri": file_uri(&rgd), "range": range((l, s + 6, e))}]),
        "{r}"
    );
    assert!(lsp.shutdown().success());
}

#[test]
fn the_outline_lists_the_graphs_resources() {
    let (_dir, mut lsp, uri, text) = open_rgd(None);
    let r = lsp.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri}}),
    );
    let graph = &r["result"][0];
    assert_eq!(graph["name"], "webapps.example.com", "{r}");
    assert_eq!(graph["detail"], "WebApp");
    let children: Vec<(String, String)> = graph["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["detail"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        children,
        [
            ("deployment", "Deployment"),
            ("service", "Service"),
            ("ingress", "Ingress"),
            ("regionConfig", "ConfigMap"),
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );
    let id = span_of(&text, "id: service", 0);
    assert_eq!(
        graph["children"][1]["selectionRange"],
        range((id.0, id.1 + 4, id.2))
    );
    assert!(lsp.shutdown().success());
}

#[test]
fn a_misspelt_id_has_a_quick_fix_that_names_the_right_one() {
    let text = rgd_text().replace(
        "name: ${deployment.metadata.name}",
        "name: ${deploymnt.metadata.name}",
    );
    let (_dir, mut lsp, uri, text) = open_rgd(Some(&text));
    let published = lsp.sync();
    let ds = Lsp::published(&published, &uri).unwrap_or_default();
    let (line, start, _) = span_of(&text, "${deploymnt", 0);
    let r = lsp.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": range((line, 0, start + 11)),
               "context": {"diagnostics": ds}}),
    );
    assert_eq!(
        r["result"],
        json!([{"title": "Replace with `deployment`", "kind": "quickfix",
                "edit": {"changes": {uri.clone(): [
                    {"range": range((line, start + 2, start + 11)), "newText": "deployment"}]}}}]),
        "{r}"
    );
    assert!(lsp.shutdown().success());
}

/// A kurel package `app.kurel` in a scratch folder, with its `parameters` and one resource
/// file `resources/NAME` holding `text`; the package's path and the resource's.
pub(crate) fn kurel_package(
    parameters: &str,
    name: &str,
    text: &str,
) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap().join("app.kurel");
    fs::create_dir_all(ws.join("resources")).unwrap();
    fs::write(ws.join("kurel.yaml"), "name: app\nversion: 1.0.0\n").unwrap();
    fs::write(ws.join("parameters.yaml"), parameters).unwrap();
    let file = ws.join("resources").join(name);
    fs::write(&file, text).unwrap();
    (dir, ws, file)
}

#[test]
fn a_hover_never_shows_a_secret_value() {
    // A kurel package whose parameter becomes a Secret's value: hovering its use quotes the
    // declaration, and the value is blanked there as in every diagnostic.
    let secret = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: app\nstringData:\n  password: ${db.password}\n";
    let (_dir, ws, file) = kurel_package(
        "db:\n  password: hunter2-very-secret\n",
        "secret.yaml",
        secret,
    );
    let (mut lsp, _) = Lsp::start(KILN, &ws);
    let uri = file_uri(&file);
    lsp.open(&uri, secret);
    let (line, start, _) = span_of(secret, "${db.password}", 0);
    let r = lsp.request("textDocument/hover", at(&uri, (line, start + 6)));
    let md = r["result"]["contents"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("a hover: {r}"));
    assert!(md.contains("`db.password`"), "{md}");
    assert!(!md.contains("hunter2"), "the value is blanked: {md}");
    assert!(lsp.shutdown().success());
}

#[test]
fn an_undefined_field_has_a_quick_fix_to_the_declared_one() {
    let text = rgd_text().replace(
        "replicas: ${schema.spec.replicas}",
        "replicas: ${schema.spec.replica}",
    );
    let (_dir, mut lsp, uri, text) = open_rgd(Some(&text));
    let (line, start, end) = span_of(&text, "${schema.spec.replica}", 0);
    let r = lsp.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": range((line, start, end)),
               "context": {"diagnostics": []}}),
    );
    assert_eq!(
        r["result"],
        json!([{"title": "Replace with `replicas`", "kind": "quickfix",
                "edit": {"changes": {uri.clone(): [
                    {"range": range((line, end - 8, end - 1)), "newText": "replicas"}]}}}]),
        "{r}"
    );
    assert!(lsp.shutdown().success());
}
