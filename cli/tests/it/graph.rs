//! `kiln graph` output that tools can read (issue 28): one DOT digraph and one Mermaid flowchart
//! for any number of definitions, a subgraph per RGD, nested-composition edges between
//! subgraphs, node ids that keywords of either language cannot break, and the kind,
//! `includeWhen` and `forEach` of every node. DOT is checked with the real Graphviz `dot`
//! (scripts/graphviz.sh finds or installs it, and fails loudly when it cannot); Mermaid, whose
//! parser needs a browser, with a grammar check of the subset kiln emits.

use kiln_test_support::Cmd;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common;
use common::{kiln, text, write};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Resource ids that are keywords of DOT (`node`, `edge`, `subgraph`, `strict`, `digraph`) or
/// Mermaid (`end`, `subgraph`, `style`, `click`), one conditional and one collection among
/// them. (`graph` is a keyword of both, but kro reserves it as an id.)
const KEYWORDS: &str = r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: keywords}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Keywords
    spec:
      on: boolean | default=true
      names: '[]string | default=["a", "b"]'
  resources:
    - id: end
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}-end"}
    - id: style
      includeWhen: ["${schema.spec.on}"]
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${end.metadata.name}-style"}
    - id: node
      forEach:
        - n: ${schema.spec.names}
      template:
        apiVersion: v1
        kind: Secret
        metadata: {name: "${style.metadata.name}-${n}"}
    - id: strict
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${node[0].metadata.name}-strict"}
    - id: digraph
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${strict.metadata.name}-digraph"}
    - id: click
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${digraph.metadata.name}-click"}
    - id: subgraph
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${end.metadata.name}-sub"}
    - id: edge
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${subgraph.metadata.name}-edge"}
"#;

/// A directory with the keywords RGD and the two-level nested composition (four RGDs), and the
/// path `kiln graph` reads.
fn inputs() -> (tempfile::TempDir, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "all/keywords.yaml", KEYWORDS);
    let nested = root().join("testdata/strategies/nested-two-level");
    for e in std::fs::read_dir(&nested).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".yaml") && !name.starts_with("expected") {
            std::fs::copy(&p, tmp.path().join("all").join(name)).unwrap();
        }
    }
    (tmp, vec!["all".to_string()])
}

fn graph(dir: &Path, paths: &[String], format: &str) -> String {
    let mut args = vec!["graph"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["--format", format]);
    let o = kiln(dir, &args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    text(&o.stdout)
}

#[test]
fn dot_is_one_digraph_that_graphviz_parses() {
    let (tmp, paths) = inputs();
    let out = graph(tmp.path(), &paths, "dot");
    assert_eq!(out.matches("digraph ").count(), 1, "{out}");
    assert_eq!(out.matches("subgraph cluster_").count(), 5, "{out}");
    // The nested compositions point at the clusters of the definitions they expand into.
    assert_eq!(out.matches("label=\"nests\"").count(), 3, "{out}");
    let script = root().join("scripts/graphviz.sh");
    let found = Command::new("bash").arg(&script).output().unwrap();
    assert!(
        found.status.success(),
        "Graphviz is needed to check DOT output: {}",
        text(&found.stderr)
    );
    let dot = text(&found.stdout).trim().to_string();
    let parsed = Cmd::new(&dot).arg("-Tcanon").stdin(&out).output();
    assert!(
        parsed.status.success() && parsed.stderr.is_empty(),
        "dot refused kiln's output: {}\n{out}",
        text(&parsed.stderr)
    );
    // Every resource survived the parse as a node of its own (keywords included).
    let canon = text(&parsed.stdout);
    for id in [
        "end", "style", "node", "subgraph", "edge", "strict", "digraph", "click",
    ] {
        assert!(canon.contains(&format!("/{id}\"")), "{id} lost:\n{canon}");
    }
}

/// The Mermaid subset kiln writes, checked line by line: one `flowchart TD`; `subgraph ID
/// ["label"]` … `end` blocks, closed; node declarations `ID` + a shape around a quoted label;
/// edges `ID --> ID` and `ID -.->|text| ID` between declared nodes or subgraphs. Ids are
/// `[A-Za-z0-9_]+` and never a keyword; labels hold no bare `"`.
fn check_mermaid(out: &str) -> Result<(usize, BTreeSet<String>), String> {
    const KEYWORDS: &[&str] = &[
        "end",
        "graph",
        "subgraph",
        "flowchart",
        "direction",
        "style",
        "click",
        "class",
        "classDef",
        "linkStyle",
    ];
    let is_id = |s: &str| {
        !s.is_empty()
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !KEYWORDS.contains(&s)
    };
    let label = |s: &str| -> Result<(), String> {
        let inner = s
            .strip_prefix('"')
            .and_then(|s| s.strip_suffix('"'))
            .ok_or(format!("label not quoted: {s}"))?;
        if inner.contains('"') {
            return Err(format!("bare quote in label {s}"));
        }
        Ok(())
    };
    let mut lines = out.lines();
    if lines.next() != Some("flowchart TD") {
        return Err("does not start with `flowchart TD`".into());
    }
    let (mut open, mut subgraphs) = (0usize, 0usize);
    let mut declared = BTreeSet::new();
    let mut edges = Vec::new();
    for line in lines {
        let l = line.trim();
        if l == "end" {
            open = open.checked_sub(1).ok_or("`end` without a subgraph")?;
        } else if let Some(rest) = l.strip_prefix("subgraph ") {
            let (id, lab) = rest.split_once(' ').ok_or(format!("subgraph: {l}"))?;
            if !is_id(id) {
                return Err(format!("subgraph id {id:?}"));
            }
            label(
                lab.strip_prefix('[')
                    .and_then(|s| s.strip_suffix(']'))
                    .ok_or(format!("subgraph label: {l}"))?,
            )?;
            declared.insert(id.to_string());
            open += 1;
            subgraphs += 1;
        } else if let Some((a, b)) = l.split_once(" --> ") {
            edges.push((a.to_string(), b.to_string()));
        } else if let Some((a, rest)) = l.split_once(" -.->|") {
            let (text, b) = rest.split_once("| ").ok_or(format!("edge text: {l}"))?;
            if text.contains(['|', '"']) {
                return Err(format!("edge text {text:?}"));
            }
            edges.push((a.to_string(), b.to_string()));
        } else {
            let cut = l
                .find(['[', '{', '('])
                .ok_or(format!("unknown line: {l}"))?;
            let (id, shape) = l.split_at(cut);
            if !is_id(id) {
                return Err(format!("node id {id:?}"));
            }
            let inner = [
                ("[[", "]]"),
                ("[/", "/]"),
                ("{{", "}}"),
                ("[", "]"),
                ("{", "}"),
            ]
            .iter()
            .find_map(|(o, c)| shape.strip_prefix(o).and_then(|s| s.strip_suffix(c)))
            .ok_or(format!("node shape: {l}"))?;
            label(inner)?;
            declared.insert(id.to_string());
        }
    }
    if open != 0 {
        return Err(format!("{open} subgraph(s) not closed"));
    }
    for (a, b) in &edges {
        for end in [a, b] {
            if !declared.contains(end.as_str()) {
                return Err(format!("edge to undeclared {end:?}"));
            }
        }
    }
    Ok((subgraphs, declared))
}

#[test]
fn mermaid_is_one_flowchart_of_subgraphs_with_safe_ids() {
    let (tmp, paths) = inputs();
    let out = graph(tmp.path(), &paths, "mermaid");
    let (subgraphs, _) = check_mermaid(&out).unwrap_or_else(|e| panic!("{e}:\n{out}"));
    assert_eq!(subgraphs, 5, "{out}");
    assert_eq!(out.matches("flowchart").count(), 1, "{out}");
    assert_eq!(out.matches("-.->|nests|").count(), 3, "{out}");
    // The checker itself refuses what broke Mermaid before: a second diagram, a bare keyword id.
    let refused = check_mermaid(&format!("{out}flowchart TD\n")).expect_err("an error");
    assert_eq!(refused, "unknown line: flowchart TD");
    let refused = check_mermaid("flowchart TD\n  end[\"x\"]\n").expect_err("an error");
    assert_eq!(refused, "node id \"end\"");
}

#[test]
fn every_format_marks_kind_conditions_and_collections() {
    let (tmp, _) = inputs();
    let paths = vec!["all/keywords.yaml".to_string()];
    let text_out = graph(tmp.path(), &paths, "text");
    assert!(
        text_out.contains("style (ConfigMap, includeWhen)")
            && text_out.contains("node (Secret, forEach)")
            && text_out.contains("end (ConfigMap)"),
        "{text_out}"
    );
    let json: serde_json::Value = serde_json::from_str(&graph(tmp.path(), &paths, "json")).unwrap();
    let resources = json["graphs"][0]["resources"].as_array().unwrap();
    let by_id = |id: &str| resources.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(by_id("style")["includeWhen"], true);
    assert_eq!(by_id("node")["forEach"], true);
    assert_eq!(by_id("node")["kind"], "Secret");
    assert_eq!(by_id("edge")["includeWhen"], false);
    let mermaid = graph(tmp.path(), &paths, "mermaid");
    assert!(
        mermaid.contains("{\"style<br/>ConfigMap, includeWhen\"}"),
        "{mermaid}"
    );
    assert!(
        mermaid.contains("[[\"node<br/>Secret, forEach\"]]"),
        "{mermaid}"
    );
    let dot = graph(tmp.path(), &paths, "dot");
    assert!(
        dot.contains("\"0/style\" [label=\"style\\nConfigMap, includeWhen\", shape=diamond]"),
        "{dot}"
    );
}
