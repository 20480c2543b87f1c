//! Criterion micro-benchmarks of kiln's hot paths, on the web-app fleet's own inputs:
//! `${}` scanning, CEL compile and evaluation, rendering one instance, static analysis of a
//! 200-resource graph (`kiln validate`), YAML parsing (the fast path against serde-saphyr), YAML
//! serialisation.
//!
//! `cargo bench -p kiln-bench --bench hot_paths` (add `-- --quick` for a fast pass).
//!
//! TODO(issue 6): add the JSON-patch hot path (component addon patches, kurel patches) once those
//! front-ends expose their patch application in kiln_core.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kiln_bench::fleet::{
    AppSpec, ComponentFleet, Fleet, WebApp, COMPONENT_DEFINITIONS, WEBAPP_RGD,
};
use kiln_core::component;
use kiln_core::document::{fast, parse_file, parse_yaml_reference, Document, YamlLimits};
use kiln_core::expr::cel::{compile, new_context, ExprLimits};
use kiln_core::expr::scan::{classify, scan};
use kiln_core::expr::value::to_cel;
use kiln_core::kro;
use kiln_core::output::yaml_stream;
use kiln_core::pipeline::{self, Options};
use kiln_core::render::{render_unit, RenderLimits, Unit};
use serde_json::Value;

fn docs(name: &str, text: &str) -> Vec<Document> {
    parse_file(name, text.to_string(), &YamlLimits::default()).expect("bench inputs parse")
}

/// The RGD and instance 1 of the fleet (an instance with several optional parts).
fn one_app() -> Vec<Document> {
    let mut d = docs("rgd.yaml", WEBAPP_RGD);
    d.extend(docs("app.yaml", &WebApp::instance(&AppSpec::of(1))));
    d
}

fn scanning(c: &mut Criterion) {
    let mut g = c.benchmark_group("scan");
    // The three shapes a template string takes: standalone, interpolated, no expression at all.
    let cases = [
        (
            "standalone",
            "${schema.spec.labels.merge({\"app\": schema.metadata.name})}",
        ),
        (
            "interpolated",
            "${schema.metadata.name}-${region}.example.com",
        ),
        (
            "literal",
            "ghcr.io/example/service-with-a-long-name:1.2.3-no-expressions",
        ),
    ];
    for (name, s) in cases {
        g.bench_function(format!("scan/{name}"), |b| b.iter(|| scan(black_box(s))));
        g.bench_function(format!("classify/{name}"), |b| {
            b.iter(|| classify(black_box(s)))
        });
    }
    g.finish();
}

fn cel(c: &mut Criterion) {
    let mut g = c.benchmark_group("cel");
    let limits = ExprLimits::default();
    let exprs = [
        ("field", "schema.spec.port"),
        (
            "merge",
            r#"schema.spec.labels.merge({"app.kubernetes.io/name": schema.metadata.name, "team": schema.spec.team})"#,
        ),
        (
            "ternary",
            r#"schema.spec.tier == "frontend" ? "100m" : "250m""#,
        ),
        ("join", r#"schema.spec.regions.join(",")"#),
    ];
    // The `schema` variable of a real instance, defaulted as the renderer sees it.
    let instance = &docs("app.yaml", &WebApp::instance(&AppSpec::of(1)))[0].value;
    for (name, src) in exprs {
        g.bench_function(format!("compile/{name}"), |b| {
            b.iter(|| compile(black_box(src), &limits).expect("compiles"))
        });
        let compiled = compile(src, &limits).expect("compiles");
        let mut ctx = new_context();
        ctx.add_variable_from_value("schema", to_cel(instance));
        g.bench_function(format!("evaluate/{name}"), |b| {
            b.iter(|| {
                compiled
                    .program
                    .execute(black_box(&ctx))
                    .expect("evaluates")
            })
        });
    }
    // Once per unit: a context with kiln's functions and the instance as a CEL value.
    g.bench_function("context_per_unit", |b| {
        b.iter(|| {
            let mut ctx = new_context();
            ctx.add_variable_from_value("schema", to_cel(black_box(instance)));
            ctx
        })
    });
    g.finish();
}

fn rendering(c: &mut Criterion) {
    let mut g = c.benchmark_group("render");
    let inputs = one_app();
    let opts = Options::default();
    // The whole pipeline for one app: what one `kiln render` process does between parse and
    // serialise, including loading (and compiling) the RGD.
    g.bench_function("pipeline/one_instance", |b| {
        b.iter(|| pipeline::render(black_box(&inputs), &opts).expect("renders"))
    });
    // The per-unit part alone, with the definition loaded once: what scales with N in a batch.
    let defs = pipeline::definitions(&inputs, &opts).expect("definitions load");
    let instance = &inputs[1];
    let rgd = defs
        .find(
            instance.api_version().expect("apiVersion"),
            instance.kind().expect("kind"),
        )
        .expect("the instance's RGD");
    g.bench_function("unit/one_instance", |b| {
        b.iter(|| {
            let prepared = kro::instance::prepare(rgd, instance, None).expect("valid instance");
            let unit = Unit {
                graph: &rgd.graph,
                variables: vec![("schema".into(), prepared.schema)],
                namespace: prepared.namespace,
                origin: instance,
                observed: None,
                nested: None,
                pending_ok: false,
                provenance: None,
                depth: 0,
            };
            render_unit(&unit, &RenderLimits::default()).expect("renders")
        })
    });
    g.finish();
}

/// An RGD of `n` resources (Deployments, Services, ConfigMaps and ServiceAccounts in a chain,
/// each reading the previous one), for the static analysis benchmark.
fn big_rgd(n: usize) -> String {
    let mut lines: Vec<String> = [
        "apiVersion: kro.run/v1alpha1",
        "kind: ResourceGraphDefinition",
        "metadata: {name: big.kro.run}",
        "spec:",
        "  schema:",
        "    apiVersion: v1alpha1",
        "    kind: Big",
        "    spec:",
        "      name: string",
        "      replicas: integer | default=2",
        "      image: string | default=nginx",
        "  resources:",
    ]
    .iter()
    .map(|l| l.to_string())
    .collect();
    for i in 0..n {
        let p = i.saturating_sub(1);
        lines.push(format!("    - id: r{i}"));
        lines.push("      template:".into());
        let body: Vec<String> = match i % 4 {
            0 => vec![
                "apiVersion: apps/v1".into(),
                "kind: Deployment".into(),
                format!("metadata: {{name: \"${{schema.spec.name}}-{i}\"}}"),
                "spec:".into(),
                "  replicas: ${schema.spec.replicas}".into(),
                "  selector: {matchLabels: {app: x}}".into(),
                "  template:".into(),
                "    metadata: {labels: {app: x}}".into(),
                "    spec: {containers: [{name: app, image: \"${schema.spec.image}\"}]}".into(),
            ],
            1 => vec![
                "apiVersion: v1".into(),
                "kind: Service".into(),
                format!("metadata: {{name: \"${{r{p}.metadata.name}}-svc\"}}"),
                "spec:".into(),
                "  ports: [{port: 80, targetPort: 8080}]".into(),
                format!("  selector: ${{r{p}.spec.selector.matchLabels}}"),
            ],
            2 => vec![
                "apiVersion: v1".into(),
                "kind: ConfigMap".into(),
                format!("metadata: {{name: \"${{r{p}.metadata.name}}-cm\"}}"),
                "data:".into(),
                format!("  port: ${{string(r{p}.spec.ports[0].port)}}"),
                "  names: ${schema.spec.name + '-' + string(schema.spec.replicas)}".into(),
            ],
            _ => vec![
                "apiVersion: v1".into(),
                "kind: ServiceAccount".into(),
                format!(
                    "metadata: {{name: \"${{r{p}.metadata.name}}-sa\", labels: {{size: \"${{string(size(r{p}.data))}}\"}}}}"
                ),
            ],
        };
        lines.extend(body.into_iter().map(|l| format!("        {l}")));
    }
    lines.join("\n") + "\n"
}

/// `kiln validate` of one 200-resource graph: every static stage (schemas, references, types,
/// cycles, order), without rendering.
fn analysis(c: &mut Criterion) {
    let inputs = docs("big.yaml", &big_rgd(200));
    let opts = Options::default();
    let defs = pipeline::definitions(&inputs, &opts).expect("the 200-resource graph is valid");
    assert_eq!(defs.rgds[0].graph.nodes.len(), 200);
    c.bench_function("validate/200_resources", |b| {
        b.iter(|| pipeline::definitions(black_box(&inputs), &opts).expect("valid"))
    });
}

fn patching(c: &mut Criterion) {
    let mut g = c.benchmark_group("patch");
    // One component in production with its two addons: template rendering plus the addons' JSON
    // patches (a filter-expanded pointer, `/-` appends) on the Deployment. The component
    // front-end's patch application is private; this is its public entry point.
    let mut inputs = docs("definitions.yaml", COMPONENT_DEFINITIONS);
    inputs.extend(docs(
        "app.yaml",
        &ComponentFleet::documents(&AppSpec::of(1)),
    ));
    let refs: Vec<&Document> = inputs.iter().collect();
    let mut opts = Options::default().component;
    opts.env = Some("production".into());
    g.bench_function("component/one_unit_two_addons", |b| {
        b.iter(|| component::render(black_box(&refs), &opts).expect("renders"))
    });
    g.finish();
}

fn serialisation(c: &mut Criterion) {
    let mut g = c.benchmark_group("serialise");
    // About 1000 objects: the fleet averages 7 objects per instance.
    let fleet = WebApp.generate(143).expect("fleet generates");
    let mut inputs = Vec::new();
    for f in &fleet.files {
        inputs.extend(docs(&f.path, &f.text));
    }
    let objects: Vec<Value> = pipeline::render(&inputs, &Options::default())
        .expect("fleet renders")
        .objects
        .into_iter()
        .take(1000)
        .collect();
    let bytes = yaml_stream(&objects).expect("serialises").len();
    g.throughput(Throughput::Bytes(bytes as u64));
    g.bench_function(format!("yaml_stream/{}_objects", objects.len()), |b| {
        b.iter(|| yaml_stream(black_box(&objects)).expect("serialises"))
    });
    g.finish();
}

/// A Deployment as people write them: nested maps, a container list with env and port lists,
/// quoted strings, comments, labels with dotted keys.
const DEPLOYMENT: &str = r#"# The web tier.
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels:
    app.kubernetes.io/name: web
    app.kubernetes.io/part-of: shop
  annotations:
    example.com/owner: "team-checkout"
spec:
  replicas: 3
  selector:
    matchLabels:
      app.kubernetes.io/name: web
  template:
    metadata:
      labels:
        app.kubernetes.io/name: web
    spec:
      serviceAccountName: web
      containers:
      - name: app
        image: ghcr.io/example/shop:1.4.2
        args: ["--port=8080", "--log-level=info"]
        ports:
        - name: http
          containerPort: 8080
          protocol: TCP
        env:
        - name: LOG_LEVEL
          value: info
        - name: REGION
          value: eu-west-1
        - name: DB_PASSWORD
          valueFrom:
            secretKeyRef: {name: db, key: password}
        resources:
          requests: {cpu: 100m, memory: 128Mi}
          limits: {cpu: 500m, memory: 512Mi}
        readinessProbe:
          httpGet: {path: /healthz, port: http}
          periodSeconds: 10
      - name: sidecar
        image: ghcr.io/example/proxy:2.0.0 # pinned
        ports:
        - containerPort: 9090
"#;

fn yaml_parsing(c: &mut Criterion) {
    let mut g = c.benchmark_group("yaml");
    let limits = YamlLimits::default();
    let instance = WebApp::instance(&AppSpec::of(0));
    for (name, text) in [("instance", instance.as_str()), ("deployment", DEPLOYMENT)] {
        // The comparison is only meaningful if the fast path answers, and answers the same.
        let quick = fast::parse(text, &limits).expect("the input takes the fast path");
        let reference = parse_yaml_reference("bench.yaml", text, &limits).expect("parses");
        assert_eq!(
            serde_json::to_string(&quick).expect("serialises"),
            serde_json::to_string(&reference).expect("serialises"),
            "{name}"
        );
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(format!("parse_{name}/fast"), |b| {
            b.iter(|| fast::parse(black_box(text), &limits).expect("fast path"))
        });
        g.bench_function(format!("parse_{name}/serde_saphyr"), |b| {
            b.iter(|| parse_yaml_reference("bench.yaml", black_box(text), &limits).expect("parses"))
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    yaml_parsing,
    scanning,
    cel,
    rendering,
    analysis,
    patching,
    serialisation
);
criterion_main!(benches);
