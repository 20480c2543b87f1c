//! The editor's questions on the example kurel package.

use super::*;

const PARAMS: &str = include_str!("../../../examples/kpt/kurel/app.kurel/parameters.yaml");
const DEPLOYMENT: &str =
    include_str!("../../../examples/kpt/kurel/app.kurel/resources/deployment.yaml");
const PATCH: &str = "# kurel:description: sizing\n[deployment.web]\nspec.replicas: ${replicas}\n\n[service.web]\nspec.type: ${env.}\n";

fn package() -> Texts {
    [
        ("app.kurel/parameters.yaml", PARAMS),
        ("app.kurel/resources/deployment.yaml", DEPLOYMENT),
        ("app.kurel/patches/10-size.kpatch", PATCH),
        // A folder that is not a package: nothing of the above applies.
        ("other/parameters.yaml", "replicas: 1\n"),
        ("other/x.yaml", "a: ${replicas}\n"),
    ]
    .iter()
    .map(|(f, t)| (f.to_string(), t.to_string()))
    .collect()
}

fn at(text: &str, needle: &str, plus: usize) -> usize {
    text.find(needle).expect(needle) + plus
}

const DEP: &str = "app.kurel/resources/deployment.yaml";

#[test]
fn hover_on_a_variable_gives_its_declaration() {
    let t = package();
    let h = hover(&t, DEP, at(DEPLOYMENT, "${env.name}", 7)).unwrap();
    assert_eq!(&DEPLOYMENT[h.range.clone()], "env.name");
    assert_eq!(
        h.markdown,
        "`env.name`: string (`app.kurel/parameters.yaml`)\n```yaml\nname: dev\n```"
    );
    // On `env` of `env.name`: the whole map.
    let h = hover(&t, DEP, at(DEPLOYMENT, "${env.name}", 3)).unwrap();
    assert_eq!(&DEPLOYMENT[h.range.clone()], "env");
    assert!(h.markdown.starts_with("`env`: map"), "{}", h.markdown);
    // In a patch too; `values.` is kurel's other spelling.
    let h = hover(
        &t,
        "app.kurel/patches/10-size.kpatch",
        at(PATCH, "${replicas}", 3),
    )
    .unwrap();
    assert_eq!(
        h.markdown,
        "`replicas`: integer (`app.kurel/parameters.yaml`)\n```yaml\nreplicas: 1\n```"
    );
    let v = DEPLOYMENT.replace("${replicas}", "${values.replicas}");
    let mut t2 = t.clone();
    t2.insert(DEP.into(), v.clone());
    assert!(hover(&t2, DEP, at(&v, "values.replicas", 9)).is_some());
    // Not a package: nothing.
    assert_eq!(hover(&t, "other/x.yaml", 6), None);
}

#[test]
fn completion_offers_parameters_and_their_keys() {
    let t = package();
    let f = "app.kurel/patches/10-size.kpatch";
    let o = at(PATCH, "${env.}", 6);
    let c = complete(&t, f, o);
    let l: Vec<&str> = c.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(l, ["name", "region"]);
    assert_eq!(c[0].replace, o..o);
    assert_eq!(c[0].detail.as_deref(), Some("string"));
    let o = at(PATCH, "${replicas}", 4);
    let c = complete(&t, f, o);
    let l: Vec<&str> = c.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(l, ["replicas", "resources"]);
    assert_eq!(&PATCH[c[0].replace.clone()], "re");
    assert_eq!(c[0].kind, CompletionKind::Variable);
}

#[test]
fn definition_of_a_variable_and_of_a_patch_target() {
    let t = package();
    let d = definition(&t, DEP, at(DEPLOYMENT, "${env.region}", 8));
    assert_eq!(
        d,
        [Location {
            file: "app.kurel/parameters.yaml".into(),
            range: at(PARAMS, "region", 0)..at(PARAMS, "region", 6)
        }]
    );
    let f = "app.kurel/patches/10-size.kpatch";
    let d = definition(&t, f, at(PATCH, "[deployment.web]", 3));
    assert_eq!(
        d,
        [Location {
            file: DEP.into(),
            range: at(DEPLOYMENT, "web", 0)..at(DEPLOYMENT, "web", 3)
        }]
    );
    // A target no resource is: nowhere.
    assert!(definition(&t, f, at(PATCH, "[service.web]", 3)).is_empty());
}

#[test]
fn symbols_of_a_package_are_its_resources_and_patches() {
    let t = package();
    let s = symbols(&t, "app.kurel/parameters.yaml");
    let got: Vec<(&str, Option<&str>)> = s
        .iter()
        .map(|s| (s.name.as_str(), s.detail.as_deref()))
        .collect();
    assert_eq!(
        got,
        [
            ("kurel", Some("map")),
            ("replicas", Some("integer")),
            ("image", Some("string")),
            ("env", Some("map")),
            ("resources", Some("map"))
        ]
    );
    assert_eq!(s[3].kind, SymbolKind::Parameter);
    assert_eq!(
        &PARAMS[s[3].range.clone()],
        "env:\n  name: dev\n  region: eu"
    );
    let s = symbols(&t, DEP);
    assert_eq!(s.len(), 1);
    assert_eq!(
        (s[0].name.as_str(), s[0].detail.as_deref()),
        ("web", Some("Deployment"))
    );
    assert_eq!(&DEPLOYMENT[s[0].selection.clone()], "web");
    let s = symbols(&t, "app.kurel/patches/10-size.kpatch");
    let got: Vec<(&str, Option<&str>, &str)> = s
        .iter()
        .map(|s| {
            (
                s.name.as_str(),
                s.detail.as_deref(),
                &PATCH[s.range.clone()],
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "deployment.web",
                Some("deployment.web"),
                "[deployment.web]\nspec.replicas: ${replicas}"
            ),
            (
                "service.web",
                Some("service.web"),
                "[service.web]\nspec.type: ${env.}"
            )
        ]
    );
}

#[test]
fn a_multi_byte_character_before_the_cursor_is_not_split() {
    // Found by the never-panic property: the word typed starts after a two-byte `é`.
    let mut t = package();
    let text = "a: ${xfém}\n";
    t.insert(DEP.into(), text.into());
    for o in 0..=text.len() {
        let _ = complete(&t, DEP, o);
    }
    let c = complete(&t, DEP, text.find('m').unwrap() + 1);
    assert!(c.is_empty());
}

#[test]
fn references_of_a_parameter_are_its_declaration_and_every_use() {
    let t = package();
    let expect = |file: &str, text: &str, needle: &str, len: usize| Location {
        file: file.into(),
        range: at(text, needle, 0)..at(text, needle, len),
    };
    // From a use of `env`: `env.name` and `env.region` are uses of it too, `${env.}` too.
    let got = references(&t, DEP, at(DEPLOYMENT, "${env.name}", 3));
    assert_eq!(
        got,
        [
            expect("app.kurel/parameters.yaml", PARAMS, "env:", 3),
            expect("app.kurel/patches/10-size.kpatch", PATCH, "env.}", 3),
            expect(DEP, DEPLOYMENT, "env.name", 3),
            expect(DEP, DEPLOYMENT, "env.region", 3),
        ]
    );
    // From the key in parameters.yaml: `replicas`, not `resources`.
    let got = references(&t, "app.kurel/parameters.yaml", at(PARAMS, "replicas", 2));
    assert_eq!(
        got,
        [
            expect("app.kurel/parameters.yaml", PARAMS, "replicas", 8),
            expect("app.kurel/patches/10-size.kpatch", PATCH, "replicas}", 8),
            expect(DEP, DEPLOYMENT, "replicas}", 8),
        ]
    );
}

#[test]
fn every_variable_of_the_golden_packages_is_declared() {
    // Each golden package renders, so every `${path}` in its files names a parameter: the
    // editor finds its declaration (hover) and goes to it (definition).
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/kurel");
    let files = super::tests::testdata_files("kurel");
    let t: Texts = files
        .iter()
        .filter(|p| {
            p.components()
                .any(|c| c.as_os_str().to_string_lossy().ends_with(".kurel"))
        })
        .filter_map(|p| {
            let name = p.strip_prefix(&root).ok()?.display().to_string();
            Some((name, std::fs::read_to_string(p).ok()?))
        })
        .collect();
    let mut seen = 0;
    let mut failures = Vec::new();
    for (file, text) in &t {
        if super::kurel::package(&t, file).is_none() {
            continue;
        }
        for (open, _) in text.match_indices("${") {
            // `$${` is a literal; comments hold no variables.
            let line = super::expression::line_around(text, open);
            if (open > 0 && text.as_bytes()[open - 1] == b'$')
                || text[line].trim_start().starts_with('#')
            {
                continue;
            }
            seen += 1;
            let h = hover(&t, file, open + 2);
            let d = definition(&t, file, open + 2);
            if h.is_none() || d.is_empty() {
                failures.push(format!(
                    "{file}:{open}: {:?}",
                    &text[open..(open + 30).min(text.len())]
                ));
            }
        }
    }
    assert!(seen > 20, "{seen}");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn a_local_extension_belongs_to_the_package_beside_it() {
    let mut t = package();
    let patch = "[deployment.web]\nspec.replicas: ${replicas}\n";
    t.insert("app.local.kurel/patches/60-x.kpatch".into(), patch.into());
    t.insert(
        "app.local.kurel/parameters.yaml".into(),
        "replicas: 3\n".into(),
    );
    let d = definition(
        &t,
        "app.local.kurel/patches/60-x.kpatch",
        at(patch, "replicas}", 1),
    );
    assert_eq!(
        d,
        [Location {
            file: "app.kurel/parameters.yaml".into(),
            range: at(PARAMS, "replicas", 0)..at(PARAMS, "replicas", 8)
        }]
    );
}
