//! Criterion micro-benchmarks of kiln's hot paths, on the web-app fleet's own inputs:
//! `${}` scanning, CEL compile and evaluation, rendering one instance, YAML serialisation.
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
use kiln_core::document::{parse_file, Document, YamlLimits};
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
            };
            render_unit(&unit, &RenderLimits::default()).expect("renders")
        })
    });
    g.finish();
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

criterion_group!(benches, scanning, cel, rendering, patching, serialisation);
criterion_main!(benches);
