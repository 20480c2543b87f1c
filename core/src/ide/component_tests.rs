//! The editor's questions on the seed's component types (testdata/component/seed-web-app).

use super::*;

const TYPE: &str = include_str!("../../../testdata/component/seed-web-app/01-web-app.yaml");
const ADDONS: &str = include_str!("../../../testdata/component/seed-web-app/02-addons.yaml");
const COMPONENT: &str = include_str!("../../../testdata/component/seed-web-app/03-component.yaml");

fn workspace() -> Texts {
    [
        ("01.yaml", TYPE),
        ("02.yaml", ADDONS),
        ("03.yaml", COMPONENT),
    ]
    .iter()
    .map(|(f, t)| (f.to_string(), t.to_string()))
    .collect()
}

fn at(text: &str, needle: &str, plus: usize) -> usize {
    text.find(needle).expect(needle) + plus
}

#[test]
fn hover_on_a_parameter_gives_its_type_and_declaration() {
    let t = workspace();
    let o = at(TYPE, "${parameters.lifecycle.imagePullPolicy}", 30);
    let h = hover(&t, "01.yaml", o).unwrap();
    assert_eq!(
        &TYPE[h.range.clone()],
        "parameters.lifecycle.imagePullPolicy"
    );
    assert_eq!(
        h.markdown,
        "```\nstring\n```\n\n`parameters.lifecycle.imagePullPolicy`\n```yaml\nimagePullPolicy: string | default=IfNotPresent enum=Always,IfNotPresent,Never\n```"
    );
    // An envOverrides field is a parameter too; an int.
    let o = at(TYPE, "${parameters.autoscaling.minReplicas}", 30);
    let h = hover(&t, "01.yaml", o).unwrap();
    assert!(h.markdown.starts_with("```\nint\n```"), "{}", h.markdown);
    assert!(h
        .markdown
        .contains("minReplicas: integer | default=1 minimum=1"));
    // A context variable: metadata's fields as the checker declares them.
    let h = hover(&t, "01.yaml", at(TYPE, "${metadata.name}", 4)).unwrap();
    assert_eq!(&TYPE[h.range.clone()], "metadata");
    assert!(
        h.markdown.contains("podSelectors: map(string, string)"),
        "{}",
        h.markdown
    );
    // In an Addon, `instanceName` is a string.
    let h = hover(&t, "02.yaml", at(ADDONS, "${instanceName}", 4)).unwrap();
    assert!(h.markdown.starts_with("```\nstring\n```"), "{}", h.markdown);
}

#[test]
fn a_for_each_variable_is_typed_as_the_checker_types_it() {
    let text = include_str!("../../../testdata/component/foreach-and-schema/inputs.yaml");
    let t: Texts = [("in.yaml".to_string(), text.to_string())]
        .into_iter()
        .collect();
    // Over a list of `Config`: the element.
    let h = hover(&t, "in.yaml", at(text, "${config.data}", 4)).unwrap();
    assert!(h.markdown.starts_with("```\nobject {"), "{}", h.markdown);
    assert!(
        h.markdown.contains("data: map(string, string)"),
        "{}",
        h.markdown
    );
    // Over a map: `{key, value}`.
    let h = hover(&t, "in.yaml", at(text, "tag.value.join", 7)).unwrap();
    assert_eq!(&text[h.range.clone()], "tag.value");
    assert!(
        h.markdown.starts_with("```\nlist(string)\n```"),
        "{}",
        h.markdown
    );
}

#[test]
fn completion_offers_context_variables_and_parameters() {
    let t = workspace();
    let text = TYPE.replace(
        "${parameters.lifecycle.imagePullPolicy}",
        "${parameters.lifecycle.}",
    );
    let mut t2 = t.clone();
    t2.insert("01.yaml".into(), text.clone());
    let o = at(&text, "${parameters.lifecycle.}", 23);
    let c = complete(&t2, "01.yaml", o);
    let l: Vec<&str> = c.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(l, ["imagePullPolicy", "terminationGracePeriodSeconds"]);
    let text = TYPE.replace("${parameters.lifecycle.imagePullPolicy}", "${");
    t2.insert("01.yaml".into(), text.clone());
    let o = at(&text, "imagePullPolicy: ${", 19);
    let l: Vec<String> = complete(&t2, "01.yaml", o)
        .into_iter()
        .map(|c| c.label)
        .collect();
    for v in [
        "metadata",
        "parameters",
        "envOverrides",
        "workload",
        "build",
        "component",
        "environment",
    ] {
        assert!(l.iter().any(|x| x == v), "{v} in {l:?}");
    }
    // Not in a type: `instanceName` belongs to addons.
    assert!(!l.iter().any(|x| x == "instanceName"));
    // The component helpers are offered.
    assert!(component::FUNCTIONS
        .iter()
        .all(|f| l.iter().any(|x| x == f)));
}

#[test]
fn a_components_type_and_addons_go_to_their_definitions() {
    let t = workspace();
    let d = definition(&t, "03.yaml", at(COMPONENT, "deployment/web-app", 12));
    assert_eq!(
        d,
        [Location {
            file: "01.yaml".into(),
            range: at(TYPE, "web-app\n", 0)..at(TYPE, "web-app\n", 7)
        }]
    );
    let d = definition(&t, "03.yaml", at(COMPONENT, "add-file-logging-sidecar", 3));
    let name = at(ADDONS, "name: add-file-logging-sidecar", 6);
    assert_eq!(
        d,
        [Location {
            file: "02.yaml".into(),
            range: name..name + "add-file-logging-sidecar".len()
        }]
    );
}

#[test]
fn symbols_of_a_type_are_its_resources() {
    let s = symbols(&workspace(), "01.yaml");
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].name, "web-app");
    assert_eq!(s[0].detail.as_deref(), Some("ComponentTypeDefinition"));
    let c: Vec<(&str, Option<&str>)> = s[0]
        .children
        .iter()
        .map(|c| (c.name.as_str(), c.detail.as_deref()))
        .collect();
    assert_eq!(
        c,
        [
            ("deployment", Some("Deployment")),
            ("hpa", Some("HorizontalPodAutoscaler")),
            ("pdb", Some("PodDisruptionBudget"))
        ]
    );
    let s = symbols(&workspace(), "02.yaml");
    assert_eq!(s.len(), 2);
    let kinds: Vec<SymbolKind> = s[0].children.iter().map(|c| c.kind).collect();
    assert!(
        kinds.contains(&SymbolKind::Resource) && kinds.contains(&SymbolKind::Patch),
        "{kinds:?}"
    );
}

#[test]
fn references_of_a_type_and_an_addon_are_their_definition_and_every_use() {
    let t = workspace();
    let type_name = Location {
        file: "01.yaml".into(),
        range: at(TYPE, "web-app\n", 0)..at(TYPE, "web-app\n", 7),
    };
    let used = Location {
        file: "03.yaml".into(),
        range: at(COMPONENT, "deployment/web-app", 0)..at(COMPONENT, "deployment/web-app", 18),
    };
    // From the use and from the definition's name: the same two places.
    let from_use = references(&t, "03.yaml", at(COMPONENT, "deployment/web-app", 2));
    assert_eq!(from_use, [type_name.clone(), used.clone()]);
    let from_def = references(&t, "01.yaml", at(TYPE, "web-app\n", 2));
    assert_eq!(from_def, [type_name, used]);
    // An addon: its name, and the Component's entry.
    let refs = references(
        &t,
        "02.yaml",
        at(ADDONS, "name: persistent-volume-claim", 7),
    );
    let files: Vec<&str> = refs.iter().map(|l| l.file.as_str()).collect();
    assert_eq!(files, ["02.yaml", "03.yaml"]);
    assert_eq!(&COMPONENT[refs[1].range.clone()], "persistent-volume-claim");
}

/// The OpenChoreo files of the golden cases (testdata/component).
fn golden_definitions() -> Vec<(String, String)> {
    super::tests::golden("component", "openchoreo.dev")
}

#[test]
fn every_whole_expression_of_the_golden_definitions_types_in_the_editors_scope() {
    // The golden definitions pass the component checker: each expression types in the scope
    // the editor builds where it is written (a patch's and a removal's `resource`, typed by the
    // target's kind, and post-render rules are the checker's alone: left out). The checker
    // types a name it does not know as `dyn`, so this catches wrong types, not missing names:
    // the forEach test above does that.
    let mut failures = Vec::new();
    let mut seen = 0;
    for (file, text) in golden_definitions() {
        let t: Texts = [(file.clone(), text.clone())].into_iter().collect();
        for (open, _) in text.match_indices("${").take(15) {
            let Some(cur) = super::cursor::Cursor::new(&t, &file, open + 2) else {
                continue;
            };
            let (Some(root), Some(place), Some(hole)) = (cur.root(), cur.place(), cur.hole())
            else {
                continue;
            };
            let path = place.path.to_string();
            if ["patches", "removes", "validations"]
                .iter()
                .any(|k| path.contains(k))
            {
                continue;
            }
            let Some(mut scope) = component::scope(root, &place.path) else {
                continue;
            };
            let src = cur.decoded(hole.source.clone());
            seen += 1;
            if let Err(e) = component::type_of(&src, &mut scope) {
                failures.push(format!("{file}:{path}: {src}: {e}"));
            }
            // And the hover where it starts: the type of its first word.
            match hover(&t, &file, open + 2) {
                Some(h) if h.markdown.starts_with("```") => {}
                other => failures.push(format!("{file}:{path}: hover {other:?}")),
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

#[test]
fn an_upstream_type_declares_its_parameters_in_openapi_sections() {
    let text = include_str!("../../../testdata/component/upstream-embedded-traits/inputs.yaml");
    let t: Texts = [("in.yaml".to_string(), text.to_string())]
        .into_iter()
        .collect();
    let o = at(text, "containerPort: ${parameters.port}", 28);
    let h = hover(&t, "in.yaml", o).unwrap();
    assert_eq!(&text[h.range.clone()], "parameters.port");
    assert_eq!(
        h.markdown,
        "```\nint\n```\n\n`parameters.port`\n```yaml\nport: {\"type\":\"integer\",\"default\":8080}\n```"
    );
    // `environmentConfigs` is its own section upstream.
    let h = hover(&t, "in.yaml", at(text, "${environmentConfigs.port}", 22)).unwrap();
    assert!(
        h.markdown
            .ends_with("port: {\"type\":\"integer\",\"default\":9090}\n```"),
        "{}",
        h.markdown
    );
    // The type's outline: its embedded trait beside its resources.
    let s = symbols(&t, "in.yaml");
    let api = s.iter().find(|s| s.name == "api").unwrap();
    let traits: Vec<(&str, SymbolKind)> = api
        .children
        .iter()
        .filter(|c| c.kind == SymbolKind::Trait)
        .map(|c| (c.name.as_str(), c.kind))
        .collect();
    assert_eq!(traits, [("metrics", SymbolKind::Trait)]);
}
