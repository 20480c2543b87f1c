//! The editor's questions on small RGDs and on the project's examples, with exact ranges.

use super::*;

const RGD: &str = r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: webapps.example.com
spec:
  schema:
    apiVersion: v1alpha1
    kind: WebApp
    group: example.com
    spec:
      image: string | required=true
      replicas: integer | default=2 minimum=1
      labels: 'map[string]string | default={}'
      regions: '[]string | default=["eu"]'
  resources:
    - id: deployment
      readyWhen:
        - ${deployment.status.availableReplicas > 0}
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${schema.metadata.name}
          labels: ${schema.spec.labels}
        spec:
          replicas: ${schema.spec.replicas}
    - id: service
      template:
        apiVersion: v1
        kind: Service
        metadata:
          name: ${deployment.metadata.name}
        spec:
          selector: ${deployment.spec.selector.matchLabels}
    - id: perRegion
      forEach:
        - region: ${schema.spec.regions}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${region}
"#;

fn texts(files: &[(&str, &str)]) -> Texts {
    files
        .iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect()
}

/// The offset of the `n`-th (0-based) occurrence of `needle`, plus `plus`.
fn at(text: &str, needle: &str, n: usize, plus: usize) -> usize {
    text.match_indices(needle).nth(n).expect(needle).0 + plus
}

fn hover_at(text: &str, offset: usize) -> Hover {
    hover(&texts(&[("rgd.yaml", text)]), "rgd.yaml", offset).expect("a hover")
}

#[test]
fn hover_gives_the_type_of_the_part_under_the_cursor() {
    // On `replicas` of `schema.spec.replicas`: the chain up to it, typed, and its declaration.
    let o = at(RGD, "schema.spec.replicas}", 0, "schema.spec.re".len());
    let h = hover_at(RGD, o);
    assert_eq!(&RGD[h.range.clone()], "schema.spec.replicas");
    assert!(h.markdown.starts_with("```\nint\n```"), "{}", h.markdown);
    assert!(
        h.markdown
            .contains("replicas: integer | default=2 minimum=1"),
        "{}",
        h.markdown
    );
    // On `spec` of the same: the instance spec's object type.
    let h = hover_at(RGD, at(RGD, "schema.spec.replicas}", 0, "schema.sp".len()));
    assert_eq!(&RGD[h.range.clone()], "schema.spec");
    assert!(h.markdown.contains("object {"), "{}", h.markdown);
    assert!(h.markdown.contains("replicas: int"), "{}", h.markdown);
    // A map.
    let h = hover_at(
        RGD,
        at(RGD, "schema.spec.labels}", 0, "schema.spec.l".len()),
    );
    assert!(
        h.markdown.starts_with("```\nmap(string, string)\n```"),
        "{}",
        h.markdown
    );
    // A resource's field, from the bundled Deployment schema.
    let h = hover_at(
        RGD,
        at(RGD, "deployment.spec.selector", 0, "deployment.sp".len()),
    );
    assert_eq!(&RGD[h.range.clone()], "deployment.spec");
    assert!(h.markdown.contains("replicas: int"), "{}", h.markdown);
    assert!(h.markdown.contains("template: object"), "{}", h.markdown);
    // A forEach iterator is the element type of its list.
    let h = hover_at(RGD, at(RGD, "${region}", 0, 3));
    assert_eq!(&RGD[h.range.clone()], "region");
    assert!(h.markdown.starts_with("```\nstring\n```"), "{}", h.markdown);
}

#[test]
fn hover_on_a_resource_id_gives_its_kind_and_dependencies() {
    let h = hover_at(RGD, at(RGD, "deployment.metadata.name", 0, 2));
    assert_eq!(&RGD[h.range.clone()], "deployment");
    assert!(h
        .markdown
        .contains("**deployment**: `apps/v1` `Deployment`"));
    assert!(h.markdown.contains("depends on: no other resource"));
    // On the `id:` of service: it reads deployment.
    let h = hover_at(RGD, at(RGD, "id: service", 0, 5));
    assert_eq!(&RGD[h.range.clone()], "service");
    assert!(
        h.markdown
            .contains("**service**: `v1` `Service`\n\ndepends on: `deployment`"),
        "{}",
        h.markdown
    );
}

#[test]
fn hover_on_a_schema_field_gives_its_declaration() {
    let h = hover_at(RGD, at(RGD, "replicas: integer", 0, 1));
    assert_eq!(&RGD[h.range.clone()], "replicas");
    assert_eq!(
        h.markdown,
        "`schema.spec.replicas`\n```yaml\nreplicas: integer | default=2 minimum=1\n```"
    );
    // Elsewhere (a template's literal), nothing.
    assert_eq!(
        hover(
            &texts(&[("rgd.yaml", RGD)]),
            "rgd.yaml",
            at(RGD, "apps/v1", 0, 1)
        ),
        None
    );
}

fn labels(c: &[Completion]) -> Vec<&str> {
    c.iter().map(|c| c.label.as_str()).collect()
}

/// The RGD with `line` written in place of `replicas: ${schema.spec.replicas}`, and the
/// offset after its last character.
fn typing(line: &str) -> (String, usize) {
    let text = RGD.replace("replicas: ${schema.spec.replicas}", line);
    let o = at(&text, line, 0, line.len());
    (text, o)
}

#[test]
fn completion_offers_the_declared_fields_after_schema_spec() {
    let (text, o) = typing("replicas: ${schema.spec.}");
    let o = o - 1;
    let c = complete(&texts(&[("rgd.yaml", &text)]), "rgd.yaml", o);
    assert_eq!(labels(&c), ["image", "labels", "regions", "replicas"]);
    assert_eq!(c[0].replace, o..o);
    assert_eq!(
        c[3].detail.as_deref(),
        Some("integer | default=2 minimum=1")
    );
    // A partial word: only the fields it starts, replacing it; the `${` is not closed yet.
    let (text, o) = typing("replicas: ${schema.spec.re");
    let c = complete(&texts(&[("rgd.yaml", &text)]), "rgd.yaml", o);
    assert_eq!(labels(&c), ["regions", "replicas"]);
    assert_eq!(&text[c[0].replace.clone()], "re");
    assert_eq!(c[0].kind, CompletionKind::Field);
}

#[test]
fn completion_offers_a_kinds_fields_after_a_resource_id() {
    let (text, o) = typing("replicas: ${deployment.spec.");
    let c = complete(&texts(&[("rgd.yaml", &text)]), "rgd.yaml", o);
    let l = labels(&c);
    for f in ["replicas", "selector", "template", "strategy"] {
        assert!(l.contains(&f), "{f} in {l:?}");
    }
    let r = c.iter().find(|c| c.label == "replicas").unwrap();
    assert_eq!(r.detail.as_deref(), Some("int"));
}

#[test]
fn completion_at_the_start_offers_ids_variables_and_functions() {
    let (text, o) = typing("replicas: ${");
    let c = complete(&texts(&[("rgd.yaml", &text)]), "rgd.yaml", o);
    let l = labels(&c);
    for f in [
        "schema",
        "deployment",
        "service",
        "perRegion",
        "has",
        "size",
        "hash.sha256",
        "merge",
    ] {
        assert!(l.contains(&f), "{f} in {l:?}");
    }
    let d = c.iter().find(|c| c.label == "deployment").unwrap();
    assert_eq!(d.kind, CompletionKind::Resource);
    assert_eq!(d.detail.as_deref(), Some("apps/v1 Deployment"));
    let p = c.iter().find(|c| c.label == "perRegion").unwrap();
    assert_eq!(p.detail.as_deref(), Some("list of v1 ConfigMap"));
    let s = c.iter().find(|c| c.label == "schema").unwrap();
    assert_eq!(
        (s.kind, s.detail.as_deref()),
        (CompletionKind::Variable, Some("object"))
    );
    // A prefix filters; the iterator of another resource is not in scope here.
    let (text, o) = typing("replicas: ${de");
    let c = complete(&texts(&[("rgd.yaml", &text)]), "rgd.yaml", o);
    assert_eq!(labels(&c), ["deployment", "deepMerge"]);
    assert!(!l.contains(&"region"));
}

#[test]
fn completion_in_ready_when_offers_the_resource_itself_only() {
    let text = RGD.replace("${deployment.status.availableReplicas > 0}", "${d");
    let o = at(&text, "${d", 0, 3);
    let c = complete(&texts(&[("rgd.yaml", &text)]), "rgd.yaml", o);
    assert_eq!(
        labels(&c),
        ["deployment", "double", "duration", "dyn", "deepMerge"]
    );
    let text = RGD.replace("${deployment.status.availableReplicas > 0}", "${s");
    let c = complete(&texts(&[("rgd.yaml", &text)]), "rgd.yaml", o);
    assert!(labels(&c).contains(&"size"), "{:?}", labels(&c));
    assert!(!labels(&c).contains(&"schema") && !labels(&c).contains(&"service"));
}

#[test]
fn completion_offers_markers_after_the_bar() {
    let text = RGD.replace("image: string | required=true", "image: string | mi");
    let o = at(&text, "string | mi", 0, "string | mi".len());
    let c = complete(&texts(&[("rgd.yaml", &text)]), "rgd.yaml", o);
    assert_eq!(labels(&c), ["minimum=", "minLength=", "minItems="]);
    assert_eq!(&text[c[0].replace.clone()], "mi");
    assert_eq!(c[0].kind, CompletionKind::Marker);
    // After a blank at the end of the line, every marker; before the bar, none.
    let text = RGD.replace(
        "image: string | required=true",
        "image: string | required=true ",
    );
    let o = at(&text, "required=true ", 0, "required=true ".len());
    let c = complete(&texts(&[("rgd.yaml", &text)]), "rgd.yaml", o);
    assert_eq!(c.len(), crate::schema::MARKER_KEYS.len());
    let c = complete(
        &texts(&[("rgd.yaml", RGD)]),
        "rgd.yaml",
        at(RGD, "string | required", 0, 3),
    );
    assert!(c.is_empty());
}

#[test]
fn definition_and_references_of_a_resource_id() {
    let t = texts(&[("rgd.yaml", RGD)]);
    let def = Location {
        file: "rgd.yaml".into(),
        range: at(RGD, "deployment", 0, 0)..at(RGD, "deployment", 0, 10),
    };
    assert_eq!(
        definition(&t, "rgd.yaml", at(RGD, "deployment.spec", 0, 3)),
        std::slice::from_ref(&def)
    );
    // A field named like an id is not the id, nor one of its uses.
    let odd = RGD.replace(
        "${deployment.spec.selector.matchLabels}",
        "${deployment.spec.selector.deployment}",
    );
    let t2 = texts(&[("rgd.yaml", &odd)]);
    assert!(definition(&t2, "rgd.yaml", at(&odd, "selector.deployment", 0, 10)).is_empty());
    assert_eq!(
        references(&t2, "rgd.yaml", at(&odd, "id: deployment", 0, 6)).len(),
        4
    );
    let refs = references(&t, "rgd.yaml", at(RGD, "id: deployment", 0, 6));
    let got: Vec<usize> = refs.iter().map(|l| l.range.start).collect();
    assert_eq!(
        got,
        [
            def.range.start,
            at(RGD, "deployment.status", 0, 0),
            at(RGD, "deployment.metadata", 0, 0),
            at(RGD, "deployment.spec", 0, 0)
        ]
    );
    assert!(refs.iter().all(|l| l.range.len() == "deployment".len()));
}

#[test]
fn an_instance_kind_goes_to_its_rgd() {
    let inst = "apiVersion: example.com/v1alpha1\nkind: WebApp\nmetadata:\n  name: a\n";
    let t = texts(&[("rgd.yaml", RGD), ("app.yaml", inst)]);
    let kind = Location {
        file: "rgd.yaml".into(),
        range: at(RGD, "WebApp", 0, 0)..at(RGD, "WebApp", 0, 6),
    };
    assert_eq!(
        definition(&t, "app.yaml", at(inst, "WebApp", 0, 2)),
        std::slice::from_ref(&kind)
    );
    // Another group is another kind.
    let other = inst.replace("example.com", "other.io");
    let t2 = texts(&[("rgd.yaml", RGD), ("app.yaml", &other)]);
    assert!(definition(&t2, "app.yaml", at(&other, "WebApp", 0, 2)).is_empty());
    // From the RGD's kind: the definition and every instance.
    let refs = references(&t, "rgd.yaml", at(RGD, "WebApp", 0, 1));
    assert_eq!(
        refs,
        [
            kind,
            Location {
                file: "app.yaml".into(),
                range: at(inst, "WebApp", 0, 0)..at(inst, "WebApp", 0, 6)
            }
        ]
    );
}

#[test]
fn symbols_of_an_rgd_are_its_resources() {
    let s = symbols(&texts(&[("rgd.yaml", RGD)]), "rgd.yaml");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].name, "webapps.example.com");
    assert_eq!(s[0].detail.as_deref(), Some("WebApp"));
    assert_eq!(s[0].kind, SymbolKind::Definition);
    let names: Vec<(&str, Option<&str>)> = s[0]
        .children
        .iter()
        .map(|c| (c.name.as_str(), c.detail.as_deref()))
        .collect();
    assert_eq!(
        names,
        [
            ("deployment", Some("Deployment")),
            ("service", Some("Service")),
            ("perRegion", Some("ConfigMap"))
        ]
    );
    let d = &s[0].children[0];
    assert_eq!(&RGD[d.selection.clone()], "deployment");
    assert!(RGD[d.range.clone()].starts_with("id: deployment"));
    assert!(RGD[d.range.clone()].ends_with("${schema.spec.replicas}"));
}

#[test]
fn the_examples_answer() {
    let text = include_str!("../../../examples/webapp/rgd.yaml");
    let t = texts(&[("rgd.yaml", text)]);
    let h = hover(&t, "rgd.yaml", at(text, "availableReplicas}", 0, 2)).unwrap();
    assert_eq!(
        &text[h.range.clone()],
        "deployment.status.availableReplicas"
    );
    assert!(h.markdown.starts_with("```\nint\n```"), "{}", h.markdown);
    // On a function's name: the call, and its result's type.
    let h = hover(&t, "rgd.yaml", at(text, "regions.join", 0, 9)).unwrap();
    assert_eq!(&text[h.range.clone()], "schema.spec.regions.join(\",\")");
    assert!(h.markdown.starts_with("```\nstring\n```"), "{}", h.markdown);
    // A field that is not there: the checker's message.
    let bad = text.replace("availableReplicas}", "availableReplica}");
    let t = texts(&[("rgd.yaml", &bad)]);
    let h = hover(&t, "rgd.yaml", at(&bad, "availableReplica}", 0, 2)).unwrap();
    assert!(
        h.markdown
            .starts_with("`deployment.status.availableReplica`: "),
        "{}",
        h.markdown
    );
    let t = texts(&[("rgd.yaml", text)]);
    let s = symbols(&t, "rgd.yaml");
    let ids: Vec<&str> = s[0].children.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(ids, ["deployment", "service", "ingress", "regionConfig"]);
}

#[test]
fn broken_texts_still_answer() {
    // An unclosed quote after the cursor's line: the lines before still parse.
    let text = RGD.replace(
        "replicas: ${schema.spec.replicas}",
        "replicas: \"${schema.spec.",
    );
    let o = at(&text, "\"${schema.spec.", 0, "\"${schema.spec.".len());
    let c = complete(&texts(&[("rgd.yaml", &text)]), "rgd.yaml", o);
    assert!(labels(&c).contains(&"replicas"), "{:?}", labels(&c));
    // A `${` in a comment is no expression.
    let text = RGD.replace(
        "  resources:\n",
        "  # see ${schema.spec.image}\n  resources:\n",
    );
    let t = texts(&[("rgd.yaml", &text)]);
    assert_eq!(hover(&t, "rgd.yaml", at(&text, "# see ${", 0, 9)), None);
    // Unknown files and offsets anywhere give nothing, never a panic.
    let t = texts(&[("rgd.yaml", "é: ${ä")]);
    for o in 0..12 {
        let _ = hover(&t, "rgd.yaml", o);
        let _ = complete(&t, "rgd.yaml", o);
        let _ = definition(&t, "rgd.yaml", o);
        let _ = references(&t, "rgd.yaml", o);
    }
    assert_eq!(hover(&t, "nope.yaml", 0), None);
}

mod never_panic {
    use super::*;
    use proptest::prelude::*;

    /// One file of each front-end; the one edited is named by index.
    const FILES: &[(&str, &str)] = &[
        ("rgd.yaml", RGD),
        (
            "types/web.yaml",
            include_str!("../../../testdata/component/seed-web-app/01-web-app.yaml"),
        ),
        (
            "types/component.yaml",
            include_str!("../../../testdata/component/seed-web-app/03-component.yaml"),
        ),
        (
            "app.kurel/parameters.yaml",
            include_str!("../../../examples/kpt/kurel/app.kurel/parameters.yaml"),
        ),
        (
            "app.kurel/resources/deployment.yaml",
            include_str!("../../../examples/kpt/kurel/app.kurel/resources/deployment.yaml"),
        ),
        (
            "quoted.yaml",
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nspec:\n  schema:\n    spec:\n      name: string\n  resources:\n    - id: a\n      template:\n        data:\n          x: \"${schema.spec.name + \\\"-}\\\" + \\\"\\\\u00e9\\\" + \\ud83d\\ude00}\"\n",
        ),
        (
            "app.kurel/patches/10-x.kpatch",
            "[deployment.web]\nspec.replicas: ${replicas}\n",
        ),
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]
        #[test]
        fn on_any_text_and_offset(
            which in 0usize..FILES.len(),
            cut in 0usize..4000,
            insert in "(\\$\\{|\\}|\"|'|\t|\n|: |- |\\||\\[|\\]|\\\\|\\\\u|[a-zé.]{0,6}){0,4}",
            offset in 0usize..4000,
        ) {
            let (file, base) = FILES[which];
            let mut cut = cut.min(base.len());
            while !base.is_char_boundary(cut) {
                cut -= 1;
            }
            let mut text = base[..cut].to_string();
            text.push_str(&insert);
            text.push_str(&base[cut..]);
            let mut t = texts(FILES);
            t.insert(file.to_string(), text);
            let _ = hover(&t, file, offset);
            let _ = complete(&t, file, offset);
            let _ = definition(&t, file, offset);
            let _ = references(&t, file, offset);
            let _ = symbols(&t, file);
            let d = crate::suggest::suggesting(
                crate::diag::Diagnostic::error(crate::diag::codes::UNKNOWN_IDENTIFIER, "x")
                    .in_file(file)
                    .at_line(offset % 60, Some(offset % 30)),
                Some("deployment"),
            );
            let _ = actions(&t, file, offset..offset + 3, &[d]);
        }
    }
}

#[test]
fn the_loaders_did_you_mean_becomes_a_replacement_of_the_misspelt_id() {
    let text = RGD.replace("${deployment.metadata.name}", "${deploymnet.metadata.name}");
    let docs = crate::document::parse_file("rgd.yaml", text.clone(), &Default::default()).unwrap();
    let errors = crate::kro::load(
        &docs[0],
        &crate::scope::Scopes::new(),
        &crate::openapi::Schemas::bundled(),
        &Default::default(),
    )
    .unwrap_err();
    let d: Vec<_> = errors
        .into_iter()
        .filter(|d| d.code == crate::diag::codes::UNKNOWN_IDENTIFIER)
        .collect();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].suggestion.as_deref(), Some("deployment"));
    let got = actions(
        &texts(&[("rgd.yaml", &text)]),
        "rgd.yaml",
        0..text.len(),
        &d,
    );
    let misspelt = at(&text, "deploymnet", 0, 0);
    assert_eq!(
        got,
        [Action {
            title: "Replace with `deployment`".into(),
            code: Some("KLN3003".into()),
            edits: vec![Edit {
                location: Location {
                    file: "rgd.yaml".into(),
                    range: misspelt..misspelt + "deploymnet".len()
                },
                text: "deployment".into()
            }]
        }]
    );
    // The JSON of the diagnostic does not change.
    assert!(!serde_json::to_string(&d[0]).unwrap().contains("suggestion"));
}

#[test]
fn a_resource_of_another_rgds_kind_or_a_crds_is_typed_by_it() {
    let outer = r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: outer
spec:
  schema:
    apiVersion: v1alpha1
    kind: Outer
    spec:
      name: string
  resources:
    - id: app
      template:
        apiVersion: example.com/v1alpha1
        kind: WebApp
        metadata:
          name: x
        spec:
          image: ${schema.spec.name}
    - id: db
      template:
        apiVersion: db.io/v1
        kind: Database
        metadata:
          name: x
        spec:
          size: ${app.spec.}
"#;
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: databases.db.io
spec:
  group: db.io
  names: {kind: Database, plural: databases}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer}
"#;
    let t = texts(&[("outer.yaml", outer), ("rgd.yaml", RGD), ("crd.yaml", crd)]);
    let o = at(outer, "${app.spec.}", 0, 11);
    let c = complete(&t, "outer.yaml", o);
    assert_eq!(labels(&c), ["image", "labels", "regions", "replicas"]);
    let text = outer.replace("${app.spec.}", "${db.spec.size}");
    let t = texts(&[("outer.yaml", &text), ("crd.yaml", crd)]);
    let h = hover(&t, "outer.yaml", at(&text, "db.spec.size", 0, 9)).unwrap();
    assert!(h.markdown.starts_with("```\nint\n```"), "{}", h.markdown);
    // Without the CRD in the workspace, the kind is unknown: dyn.
    let t = texts(&[("outer.yaml", &text)]);
    let h = hover(&t, "outer.yaml", at(&text, "db.spec.size", 0, 9)).unwrap();
    assert!(h.markdown.starts_with("```\ndyn\n```"), "{}", h.markdown);
}

/// A graph of 100 resources, about 2,000 lines: the size the server must answer within 20 ms.
pub(super) fn big_rgd() -> String {
    let mut s = RGD.split("  resources:\n").next().unwrap().to_string();
    s.push_str("  resources:\n");
    for i in 0..100 {
        let prev = if i == 0 {
            "schema.spec.image".to_string()
        } else {
            format!("d{}.metadata.name", i - 1)
        };
        s.push_str(&format!(
            "    - id: d{i}\n      template:\n        apiVersion: apps/v1\n        kind: Deployment\n        metadata:\n          name: ${{{prev}}}\n          labels:\n            app: d{i}\n            tier: web\n        spec:\n          replicas: ${{schema.spec.replicas}}\n          selector:\n            matchLabels:\n              app: d{i}\n          template:\n            metadata:\n              labels:\n                app: d{i}\n            spec:\n              containers:\n                - name: app\n                  image: ${{schema.spec.image}}\n"
        ));
    }
    s
}

#[test]
fn a_big_graph_answers() {
    let text = big_rgd();
    assert!(text.lines().count() > 2000, "{}", text.lines().count());
    let t = texts(&[("rgd.yaml", &text)]);
    let o = text.rfind("${schema.spec.image}").unwrap() + "${schema.spec.".len();
    // Timed for the record only (the tests run on busy machines): once cold, once warm.
    for _ in 0..2 {
        let start = std::time::Instant::now();
        let _ = complete(&t, "rgd.yaml", o);
        eprintln!("complete: {:?}", start.elapsed());
    }
    let start = std::time::Instant::now();
    let _ = crate::ide::tree::parse(&text);
    eprintln!("parse: {:?}", start.elapsed());
    let first = text.rfind("${schema.spec.image}").unwrap() + 2;
    let start = std::time::Instant::now();
    let all = complete(&t, "rgd.yaml", first);
    eprintln!("complete at the start: {:?}", start.elapsed());
    assert!(all.len() > 100, "{}", all.len());
    let c = complete(&t, "rgd.yaml", o);
    assert_eq!(labels(&c), ["image", "labels", "regions", "replicas"]);
    let start = std::time::Instant::now();
    let h = hover(&t, "rgd.yaml", text.rfind("d98.metadata").unwrap()).unwrap();
    eprintln!("hover: {:?}", start.elapsed());
    assert!(h.markdown.contains("depends on: `d97`"), "{}", h.markdown);
    let start = std::time::Instant::now();
    let r = references(&t, "rgd.yaml", text.find("id: d50").unwrap() + 4);
    eprintln!("references: {:?}", start.elapsed());
    assert_eq!(r.len(), 2);
}

/// Every file under `testdata/<under>`, in path order.
pub(super) fn testdata_files(under: &str) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../testdata")
            .join(under),
        &mut out,
    );
    out
}

/// The YAML files under `testdata/<under>` whose text holds `marker`, by path.
pub(super) fn golden(under: &str, marker: &str) -> Vec<(String, String)> {
    testdata_files(under)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            text.contains(marker)
                .then(|| (p.display().to_string(), text))
        })
        .collect()
}

/// The RGDs of the golden cases (testdata/render).
fn golden_rgds() -> Vec<(String, String)> {
    golden("render", "kind: ResourceGraphDefinition")
}

#[test]
fn every_expression_of_the_golden_rgds_types_where_it_starts() {
    let rgds = golden_rgds();
    assert!(rgds.len() > 10, "{}", rgds.len());
    let mut failures = Vec::new();
    let mut seen = 0;
    for (file, text) in &rgds {
        let t = texts(&[(file.as_str(), text.as_str())]);
        for (open, _) in text.match_indices("${") {
            let line = super::expression::line_around(text, open);
            if text[line].trim_start().starts_with('#') {
                continue;
            }
            let Some(h) = hover(&t, file, open + 2) else {
                failures.push(format!("{file}:{open}: no hover"));
                continue;
            };
            seen += 1;
            if !h.markdown.starts_with("```") {
                failures.push(format!("{file}:{open}: {}", h.markdown));
            }
        }
    }
    assert!(seen > 100, "{seen}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_whole_expression_of_the_golden_rgds_types_in_the_editors_scope() {
    // The golden cases pass kiln's checker, so each of their expressions types in the scope
    // the editor builds for where it is written: the scopes are the checker's (wrong types; a
    // name missing from a scope is `dyn` to the checker, which the scope tests catch).
    let mut failures = Vec::new();
    let mut seen = 0;
    for (file, text) in golden_rgds() {
        let t = texts(&[(file.as_str(), text.as_str())]);
        for (open, _) in text.match_indices("${") {
            let Some(cur) = super::cursor::Cursor::new(&t, &file, open + 2) else {
                continue;
            };
            let (Some(root), Some(place), Some(hole)) = (cur.root(), cur.place(), cur.hole())
            else {
                continue;
            };
            // Status conditions see kro's `runtime` besides, which the editor does not declare.
            if place.path.to_string().contains("conditions") {
                continue;
            }
            let schemas = kro::schemas(&t, root);
            let mut scope = kro::scope(root, &place.path, &schemas);
            let src = cur.decoded(hole.source.clone());
            seen += 1;
            if let Err(e) = kro::type_of(&src, &mut scope) {
                failures.push(format!("{file}:{}: {src}: {e}", place.path));
            }
        }
    }
    assert!(seen > 100, "{seen}");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
