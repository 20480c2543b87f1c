//! Synthetic fleets: the inputs the harness renders, generated deterministically in memory.
//!
//! A [`Fleet`] turns a size N into a [`Generated`] set of files plus the `kiln` command lines that
//! render them, as a whole (batch) and one app at a time (the way a GitOps plugin is called). Every
//! figure of the harness is measured on what a fleet generates, so a new front-end only needs a new
//! `Fleet` to appear in the table.
//!
//! Variation between instances comes from a hash of the instance index, not from a random number
//! generator: the same N always gives the same bytes, so runs on different machines compare.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use kiln_core::pipeline::Options;

use crate::kustomize::{self, KustomizeTree};

/// Shared with the kustomize fleet (defined in [`crate::apps`]).
pub use crate::apps::{mix, AppSpec, GenFile, REGIONS};

/// The same render done in-process through `kiln_core`, so the harness can time the stages and get
/// the output objects without a second process.
// One value per fleet, built once: the size of pipeline::Options (which carries the schemas)
// does not matter here.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum InProcess {
    /// `kiln render INPUTS…`: `source::load_inputs`, then `pipeline::definitions` (timed alone)
    /// and `pipeline::render`.
    Documents {
        /// Inputs relative to the fleet directory, as `kiln render` would be given them.
        inputs: Vec<String>,
        /// The options `kiln render` would build from its flags.
        options: Options,
        /// `--env NAME`: the environment components are rendered for.
        environment: Option<String>,
    },
    /// `kiln render PKG --instances DIR`: `kurel::load` and the instance files, then
    /// `kurel::Prepared::new` (the shared part, timed alone) and `kurel::render_instances`.
    KurelInstances {
        /// The package directory, relative to the fleet directory.
        package: String,
        /// The instances directory, relative to the fleet directory.
        instances: String,
    },
}

/// One `kiln` process of a batch render.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// Arguments after `kiln`, relative to the fleet directory (no `--jobs`: the harness adds it).
    pub args: Vec<String>,
    /// The equivalent in-process call, when the front-end exposes one through `kiln_core`.
    pub in_process: Option<InProcess>,
}

/// Everything a fleet of N units consists of.
#[derive(Debug, Clone)]
pub struct Generated {
    /// Files to write under the fleet directory.
    pub files: Vec<GenFile>,
    /// Processes that together render the whole fleet (one for a kro fleet).
    pub batch: Vec<Invocation>,
    /// For each unit, the arguments that render it alone (`kiln` + args, relative paths).
    pub apps: Vec<Vec<String>>,
    /// Objects each unit renders to, in unit order (sums to the batch's object count).
    pub objects_per_app: Vec<usize>,
    /// The equivalent kustomize tree, if the fleet has one: overlay `i` is unit `i`.
    pub kustomize: Option<KustomizeTree>,
}

impl Generated {
    /// Objects the whole fleet renders to.
    pub fn objects(&self) -> usize {
        self.objects_per_app.iter().sum()
    }

    /// Write every kiln file (and the kustomize tree) under `dir`, creating directories.
    pub fn write(&self, dir: &Path) -> Result<(), String> {
        let kust = self.kustomize.iter().flat_map(|k| k.files.iter());
        for f in self.files.iter().chain(kust) {
            write_file(&dir.join(&f.path), &f.text)?;
        }
        Ok(())
    }
}

fn write_file(path: &Path, text: &str) -> Result<(), String> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| format!("cannot create directory {}: {e}", parent.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// A kind of synthetic fleet.
///
/// Extension point: the component-type and kurel fleets implement this once their front-ends
/// render (issues 4 and 5). Until then [`Fleet::generate`] says why it cannot, and the table shows
/// the row as "not available" with that reason. A fleet that generates but that `kiln render`
/// rejects (a front-end that exists but is incomplete) is reported the same way, with kiln's error.
pub trait Fleet {
    /// Short name for the table, JSON keys and the directory under the scratch dir.
    fn name(&self) -> &'static str;
    /// What one unit of the fleet is, for the table's header.
    fn unit(&self) -> String;
    /// The fleet of `n` units, or why it cannot be generated.
    fn generate(&self, n: usize) -> Result<Generated, String>;
}

/// Every fleet the harness knows, in table order.
pub fn all() -> Vec<Box<dyn Fleet>> {
    vec![
        Box::new(WebApp),
        Box::new(ComponentFleet),
        Box::new(KurelFleet),
    ]
}

/// The web-app fleet: N instances of one kro ResourceGraphDefinition.
pub struct WebApp;

/// Distinct `${}` expressions of [`WEBAPP_RGD`] (a test keeps this in step with the text).
pub const WEBAPP_EXPRESSIONS: usize = 24;

/// Where the web-app fleet's kiln inputs live, relative to the fleet directory.
pub const WEBAPP_DIR: &str = "kiln";

/// The ResourceGraphDefinition of the web-app fleet: seven resources (two behind `includeWhen`,
/// one `forEach`), [`WEBAPP_EXPRESSIONS`] distinct `${}` expressions.
pub const WEBAPP_RGD: &str = r#"# Synthetic web application of the kiln benchmark fleet (generated by kiln-bench).
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: benchapps.bench.kiln.dev
spec:
  schema:
    apiVersion: v1alpha1
    kind: BenchApp
    group: bench.kiln.dev
    spec:
      image: string | required=true
      tag: string | default="latest"
      replicas: integer | default=2 minimum=1 maximum=50
      port: integer | default=8080 minimum=1 maximum=65535
      team: string | required=true
      tier: string | default="backend" enum=frontend,backend
      logLevel: string | default="info"
      regions: '[]string | default=["eu-west-1"]'
      labels: 'map[string]string | default={}'
      ingress:
        enabled: boolean | default=false
        host: string | default="example.com"
      autoscaling:
        enabled: boolean | default=false
        maxReplicas: integer | default=10
        cpu: integer | default=80
  resources:
    - id: serviceAccount
      template:
        apiVersion: v1
        kind: ServiceAccount
        metadata:
          name: ${schema.metadata.name}
          labels: '${schema.spec.labels.merge({"app.kubernetes.io/name": schema.metadata.name, "team": schema.spec.team})}'
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-config
          labels: ${serviceAccount.metadata.labels}
        data:
          LOG_LEVEL: ${schema.spec.logLevel}
          PORT: ${string(schema.spec.port)}
          REGIONS: ${schema.spec.regions.join(",")}
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${schema.metadata.name}
          labels: ${serviceAccount.metadata.labels}
        spec:
          replicas: ${schema.spec.replicas}
          selector:
            matchLabels:
              app.kubernetes.io/name: ${schema.metadata.name}
          template:
            metadata:
              labels: ${serviceAccount.metadata.labels}
            spec:
              serviceAccountName: ${serviceAccount.metadata.name}
              containers:
                - name: app
                  image: ${schema.spec.image}:${schema.spec.tag}
                  ports:
                    - name: http
                      containerPort: ${schema.spec.port}
                  envFrom:
                    - configMapRef:
                        name: ${config.metadata.name}
                  resources:
                    requests:
                      cpu: '${schema.spec.tier == "frontend" ? "100m" : "250m"}'
                      memory: 128Mi
    - id: service
      template:
        apiVersion: v1
        kind: Service
        metadata:
          name: ${deployment.metadata.name}
          labels: ${deployment.metadata.labels}
        spec:
          selector: ${deployment.spec.selector.matchLabels}
          ports:
            - name: http
              port: 80
              targetPort: ${schema.spec.port}
    - id: autoscaler
      includeWhen:
        - ${schema.spec.autoscaling.enabled}
      template:
        apiVersion: autoscaling/v2
        kind: HorizontalPodAutoscaler
        metadata:
          name: ${deployment.metadata.name}
          labels: ${deployment.metadata.labels}
        spec:
          scaleTargetRef:
            apiVersion: apps/v1
            kind: Deployment
            name: ${deployment.metadata.name}
          minReplicas: ${schema.spec.replicas}
          maxReplicas: ${schema.spec.autoscaling.maxReplicas}
          metrics:
            - type: Resource
              resource:
                name: cpu
                target:
                  type: Utilization
                  averageUtilization: ${schema.spec.autoscaling.cpu}
    - id: ingress
      includeWhen:
        - ${schema.spec.ingress.enabled}
      template:
        apiVersion: networking.k8s.io/v1
        kind: Ingress
        metadata:
          name: ${service.metadata.name}
          labels: ${deployment.metadata.labels}
        spec:
          rules:
            - host: ${schema.spec.ingress.host}
              http:
                paths:
                  - path: /
                    pathType: Prefix
                    backend:
                      service:
                        name: ${service.metadata.name}
                        port:
                          name: http
    - id: regionConfig
      forEach:
        - region: ${schema.spec.regions}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-${region}
          labels: ${deployment.metadata.labels}
        data:
          region: ${region}
          endpoint: https://${region}.example.com
"#;

impl WebApp {
    /// The instance document of `spec`.
    pub fn instance(spec: &AppSpec) -> String {
        let mut s = String::with_capacity(640);
        // `writeln!` into a String cannot fail.
        let _ = writeln!(s, "apiVersion: bench.kiln.dev/v1alpha1");
        let _ = writeln!(s, "kind: BenchApp");
        let _ = writeln!(s, "metadata:");
        let _ = writeln!(s, "  name: {}", spec.name);
        let _ = writeln!(s, "  namespace: {}", spec.namespace);
        let _ = writeln!(s, "spec:");
        let _ = writeln!(s, "  image: {}", spec.image);
        let _ = writeln!(s, "  tag: \"{}\"", spec.tag);
        let _ = writeln!(s, "  replicas: {}", spec.replicas);
        let _ = writeln!(s, "  port: {}", spec.port);
        let _ = writeln!(s, "  team: {}", spec.team);
        let _ = writeln!(s, "  tier: {}", spec.tier);
        let _ = writeln!(s, "  logLevel: {}", spec.log_level);
        let _ = writeln!(s, "  regions: [{}]", spec.regions.join(", "));
        let _ = writeln!(s, "  labels:");
        let _ = writeln!(s, "    cost-center: {}", spec.cost_center);
        let _ = writeln!(s, "  ingress:");
        let _ = writeln!(s, "    enabled: {}", spec.ingress);
        let _ = writeln!(s, "    host: {}.example.com", spec.name);
        let _ = writeln!(s, "  autoscaling:");
        let _ = writeln!(s, "    enabled: {}", spec.autoscaling);
        let _ = writeln!(s, "    maxReplicas: {}", spec.max_replicas);
        let _ = writeln!(s, "    cpu: {}", spec.cpu_target);
        s
    }
}

impl Fleet for WebApp {
    fn name(&self) -> &'static str {
        "webapp"
    }

    fn unit(&self) -> String {
        format!("kro instance of a 7-resource web-app RGD ({WEBAPP_EXPRESSIONS} expressions)")
    }

    fn generate(&self, n: usize) -> Result<Generated, String> {
        let rgd = format!("{WEBAPP_DIR}/rgd.yaml");
        let mut files = vec![GenFile {
            path: rgd.clone(),
            text: WEBAPP_RGD.to_string(),
        }];
        let mut apps = Vec::with_capacity(n);
        let mut objects_per_app = Vec::with_capacity(n);
        let mut specs = Vec::with_capacity(n);
        for i in 0..n {
            let spec = AppSpec::of(i);
            // One file per app, as a GitOps repository holds them; the batch reads the directory.
            let path = format!("{WEBAPP_DIR}/apps/{}.yaml", spec.name);
            files.push(GenFile {
                path: path.clone(),
                text: Self::instance(&spec),
            });
            apps.push(vec!["render".into(), rgd.clone(), path]);
            objects_per_app.push(spec.objects());
            specs.push(spec);
        }
        Ok(Generated {
            files,
            batch: vec![Invocation {
                args: vec!["render".into(), WEBAPP_DIR.into()],
                in_process: Some(InProcess::Documents {
                    inputs: vec![WEBAPP_DIR.into()],
                    options: Options::default(),
                    environment: None,
                }),
            }],
            apps,
            objects_per_app,
            kustomize: Some(kustomize::webapp_tree(&specs)),
        })
    }
}

/// N Components of one component type with two addons, each rendered in two environments
/// (issue 4, `docs/component-types.md`).
///
/// Every Component has a Workload and a ComponentDeployment for `development` and `production`;
/// production turns autoscaling on and raises replicas and requests. The batch is one `kiln render`
/// of the whole directory per environment (`--env NAME`: every component in that environment;
/// both environments of a component hold the same objects, which one stream cannot hold); a unit
/// is one component in one environment, as one Argo CD application would render it. The two addons exercise the patch path: one creates a
/// PersistentVolumeClaim and mounts it through a `[?(@.name=='app')]` filter, one appends a
/// sidecar container and a volume.
pub struct ComponentFleet;

/// Where the component fleet's inputs live, relative to the fleet directory.
pub const COMPONENT_DIR: &str = "component";

/// Environments every component is deployed to.
pub const ENVIRONMENTS: [&str; 2] = ["development", "production"];

/// The component type and its two addons.
pub const COMPONENT_DEFINITIONS: &str = r#"# Component type and addons of the kiln benchmark fleet (generated by kiln-bench).
apiVersion: openchoreo.dev/v1alpha1
kind: ComponentTypeDefinition
metadata:
  name: web-service
spec:
  workloadType: deployment
  schema:
    parameters:
      port: integer | default=8080 minimum=1 maximum=65535
      regions: '[]string | default=["eu-west-1"]'
      labels: map<string> | default={}
    envOverrides:
      replicas: integer | default=1 minimum=1
      resources:
        cpu: string | default=100m
        memory: string | default=256Mi
      autoscaling:
        enabled: boolean | default=false
        maxReplicas: integer | default=10 minimum=1
        targetCPUUtilization: integer | default=80 minimum=1 maximum=100
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${metadata.name}
          namespace: ${metadata.namespace}
          labels: ${merge(parameters.labels, metadata.podSelectors)}
        spec:
          replicas: ${parameters.replicas}
          selector:
            matchLabels: ${metadata.podSelectors}
          template:
            metadata:
              labels: ${metadata.podSelectors}
            spec:
              containers:
                - name: app
                  image: ${build.image}
                  ports:
                    - name: http
                      containerPort: ${parameters.port}
                  resources:
                    requests:
                      cpu: ${parameters.resources.cpu}
                      memory: ${parameters.resources.memory}
    - id: service
      template:
        apiVersion: v1
        kind: Service
        metadata:
          name: ${metadata.name}
          namespace: ${metadata.namespace}
        spec:
          selector: ${metadata.podSelectors}
          ports:
            - name: http
              port: 80
              targetPort: ${parameters.port}
    - id: hpa
      includeWhen: ${parameters.autoscaling.enabled}
      template:
        apiVersion: autoscaling/v2
        kind: HorizontalPodAutoscaler
        metadata:
          name: ${metadata.name}
          namespace: ${metadata.namespace}
        spec:
          scaleTargetRef:
            apiVersion: apps/v1
            kind: Deployment
            name: ${metadata.name}
          minReplicas: ${parameters.replicas}
          maxReplicas: ${parameters.autoscaling.maxReplicas}
          metrics:
            - type: Resource
              resource:
                name: cpu
                target:
                  type: Utilization
                  averageUtilization: ${parameters.autoscaling.targetCPUUtilization}
    - id: regionConfig
      forEach: ${parameters.regions}
      var: region
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${metadata.name}-${region}
          namespace: ${metadata.namespace}
        data:
          region: ${region}
          endpoint: https://${region}.example.com
---
apiVersion: openchoreo.dev/v1alpha1
kind: Addon
metadata:
  name: persistent-volume
spec:
  schema:
    parameters:
      volumeName: string | required=true
      mountPath: string | required=true
      containerName: string | default=app
    envOverrides:
      size: string | default=10Gi
      storageClass: string | default=standard
  creates:
    - template:
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata:
          name: ${metadata.name}-${instanceName}
          namespace: ${metadata.namespace}
        spec:
          accessModes: [ReadWriteOnce]
          resources:
            requests:
              storage: ${parameters.size}
          storageClassName: ${parameters.storageClass}
  patches:
    - target:
        group: apps
        version: v1
        kind: Deployment
      operations:
        - op: add
          path: /spec/template/spec/volumes/-
          value:
            name: ${parameters.volumeName}
            persistentVolumeClaim:
              claimName: ${metadata.name}-${instanceName}
        - op: add
          path: /spec/template/spec/containers/[?(@.name=='${parameters.containerName}')]/volumeMounts/-
          value:
            name: ${parameters.volumeName}
            mountPath: ${parameters.mountPath}
---
apiVersion: openchoreo.dev/v1alpha1
kind: Addon
metadata:
  name: file-logging-sidecar
spec:
  schema:
    parameters:
      logFilePath: string | required=true
      containerName: string | default=app
  patches:
    - target:
        group: apps
        version: v1
        kind: Deployment
      operations:
        - op: add
          path: /spec/template/spec/containers/-
          value:
            name: log-sidecar
            image: busybox:1.36
            args: [/bin/sh, -c, 'tail -n+1 -F ${parameters.logFilePath}']
            volumeMounts:
              - name: app-logs
                mountPath: /logs
        - op: add
          path: /spec/template/spec/containers/[?(@.name=='${parameters.containerName}')]/volumeMounts/-
          value:
            name: app-logs
            mountPath: /logs
        - op: add
          path: /spec/template/spec/volumes/-
          value:
            name: app-logs
            emptyDir: {}
"#;

impl ComponentFleet {
    /// The Component, Workload and two ComponentDeployments of `spec`.
    pub fn documents(spec: &AppSpec) -> String {
        let mut s = String::with_capacity(2048);
        // `writeln!` into a String cannot fail.
        let _ = writeln!(s, "apiVersion: openchoreo.dev/v1alpha1");
        let _ = writeln!(s, "kind: Component");
        let _ = writeln!(s, "metadata:");
        let _ = writeln!(s, "  name: {}", spec.name);
        let _ = writeln!(s, "  namespace: {}", spec.namespace);
        let _ = writeln!(s, "spec:");
        let _ = writeln!(s, "  componentType: deployment/web-service");
        let _ = writeln!(s, "  parameters:");
        let _ = writeln!(s, "    port: {}", spec.port);
        let _ = writeln!(s, "    regions: [{}]", spec.regions.join(", "));
        let _ = writeln!(s, "    labels: {{cost-center: {}}}", spec.cost_center);
        let _ = writeln!(s, "    replicas: {}", spec.replicas);
        let _ = writeln!(s, "    autoscaling:");
        let _ = writeln!(s, "      enabled: {}", spec.autoscaling);
        let _ = writeln!(s, "      maxReplicas: {}", spec.max_replicas);
        let _ = writeln!(s, "  addons:");
        let _ = writeln!(s, "    - name: persistent-volume");
        let _ = writeln!(s, "      instanceName: data");
        let _ = writeln!(s, "      config: {{volumeName: data, mountPath: /data}}");
        let _ = writeln!(s, "    - name: file-logging-sidecar");
        let _ = writeln!(s, "      instanceName: logs");
        let _ = writeln!(s, "      config: {{logFilePath: /logs/{}.log}}", spec.name);
        let _ = writeln!(s, "---");
        let _ = writeln!(s, "apiVersion: openchoreo.dev/v1alpha1");
        let _ = writeln!(s, "kind: Workload");
        let _ = writeln!(s, "metadata:");
        let _ = writeln!(s, "  name: {}", spec.name);
        let _ = writeln!(s, "  namespace: {}", spec.namespace);
        let _ = writeln!(s, "spec:");
        let _ = writeln!(s, "  owner: {{componentName: {}}}", spec.name);
        let _ = writeln!(s, "  image: {}:{}", spec.image, spec.tag);
        let _ = writeln!(s, "  endpoints:");
        let _ = writeln!(s, "    - {{name: http, type: http, port: {}}}", spec.port);
        for env in ENVIRONMENTS {
            let _ = writeln!(s, "---");
            let _ = writeln!(s, "apiVersion: openchoreo.dev/v1alpha1");
            let _ = writeln!(s, "kind: ComponentDeployment");
            let _ = writeln!(s, "metadata:");
            let _ = writeln!(s, "  name: {}-{env}", spec.name);
            let _ = writeln!(s, "  namespace: {}", spec.namespace);
            let _ = writeln!(s, "spec:");
            let _ = writeln!(s, "  owner: {{componentName: {}}}", spec.name);
            let _ = writeln!(s, "  environment: {env}");
            if env == "production" {
                let _ = writeln!(s, "  overrides:");
                let _ = writeln!(s, "    replicas: {}", spec.replicas + 1);
                let _ = writeln!(s, "    resources: {{cpu: 500m, memory: 1Gi}}");
                let _ = writeln!(
                    s,
                    "    autoscaling: {{enabled: true, maxReplicas: {}}}",
                    spec.max_replicas * 2
                );
                let _ = writeln!(s, "  addonOverrides:");
                let _ = writeln!(s, "    data: {{size: 100Gi, storageClass: premium}}");
            }
        }
        s
    }

    /// Objects component `spec` renders to in `env`: Deployment, Service, the addon's
    /// PersistentVolumeClaim, one ConfigMap per region, and the HPA where autoscaling is on
    /// (always in production).
    pub fn objects(spec: &AppSpec, env: &str) -> usize {
        let hpa = spec.autoscaling || env == "production";
        3 + spec.regions.len() + usize::from(hpa)
    }
}

impl Fleet for ComponentFleet {
    fn name(&self) -> &'static str {
        "component"
    }

    fn unit(&self) -> String {
        "Component of a component type with two addons; units are (component, environment) \
         pairs, 2 environments"
            .into()
    }

    fn generate(&self, n: usize) -> Result<Generated, String> {
        let defs = format!("{COMPONENT_DIR}/definitions.yaml");
        let mut files = vec![GenFile {
            path: defs.clone(),
            text: COMPONENT_DEFINITIONS.to_string(),
        }];
        let mut apps = Vec::with_capacity(2 * n);
        let mut objects_per_app = Vec::with_capacity(2 * n);
        for i in 0..n {
            let spec = AppSpec::of(i);
            let path = format!("{COMPONENT_DIR}/apps/{}.yaml", spec.name);
            files.push(GenFile {
                path: path.clone(),
                text: Self::documents(&spec),
            });
            for env in ENVIRONMENTS {
                apps.push(vec![
                    "render".into(),
                    defs.clone(),
                    path.clone(),
                    "--env".into(),
                    env.into(),
                ]);
                objects_per_app.push(Self::objects(&spec, env));
            }
        }
        Ok(Generated {
            files,
            // One process per environment: a component's releases for two environments hold
            // the same objects (namespace and name), which one output stream cannot hold
            // (`kiln render` without `--env` refuses them as duplicates, KLN1012), as two
            // Argo CD applications or two CI jobs would render them.
            batch: ENVIRONMENTS
                .iter()
                .map(|env| Invocation {
                    args: vec![
                        "render".into(),
                        COMPONENT_DIR.into(),
                        "--env".into(),
                        (*env).into(),
                    ],
                    in_process: Some(InProcess::Documents {
                        inputs: vec![COMPONENT_DIR.into()],
                        options: Options::default(),
                        environment: Some((*env).into()),
                    }),
                })
                .collect(),
            apps,
            objects_per_app,
            kustomize: None,
        })
    }
}

/// N instances of one kurel package (issue 5): the web-app of [`WebApp`] as a package, one values
/// file per instance, rendered by one `kiln render PKG --instances DIR` process.
///
/// kurel has no conditional resources and no `forEach`: every instance renders the package's six
/// resources (ServiceAccount, ConfigMap, Deployment, Service, HorizontalPodAutoscaler, Ingress).
/// What the web-app switches with `includeWhen`, the package switches with conditional patches:
/// `10-autoscaling` (enabled by `${autoscaling.enabled}`) turns the HPA from pinned
/// (min = max = replicas) into a CPU-driven one, `20-ingress` (`${ingress.enabled}`) makes the
/// internal Ingress public with TLS, `30-frontend` (`${frontend}`) lowers the CPU request. The
/// regions are one `REGIONS` entry of the ConfigMap (a per-region ConfigMap would need a
/// resource per list item). Instance *i* takes the values of [`AppSpec::of`]`(i)`, so about half
/// the instances apply each of the autoscaling and ingress patches.
pub struct KurelFleet;

/// The package, relative to the fleet directory.
pub const KUREL_PACKAGE: &str = "kurel/app.kurel";
/// The instance files' directory, relative to the fleet directory.
pub const KUREL_INSTANCES: &str = "kurel/instances";
/// Objects every instance renders.
pub const KUREL_OBJECTS: usize = 6;

/// The package's files, relative to the package directory.
pub const KUREL_PACKAGE_FILES: &[(&str, &str)] = &[
    (
        "parameters.yaml",
        r#"# Synthetic web application of the kiln benchmark fleet (generated by kiln-bench).
kurel:
  name: bench-app
  version: 1.0.0
  appVersion: "1.0"
  description: The kiln-bench web application as a kurel package
name: app
namespace: default
image: ghcr.io/example/service
tag: latest
replicas: 2
port: 8080
team: platform
tier: backend
frontend: false
logLevel: info
regions: eu-west-1
labels:
  app.kubernetes.io/name: ${name}
  team: ${team}
  tier: ${tier}
  cost-center: cc-0
ingress:
  enabled: false
  host: example.com
autoscaling:
  enabled: false
  maxReplicas: 10
  cpu: 80
"#,
    ),
    (
        "resources/app.yaml",
        r#"apiVersion: v1
kind: ServiceAccount
metadata:
  name: ${name}
  namespace: ${namespace}
  labels: ${labels}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ${name}-config
  namespace: ${namespace}
  labels: ${labels}
data:
  LOG_LEVEL: ${logLevel}
  PORT: ${port}
  REGIONS: ${regions}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: ${name}
  namespace: ${namespace}
  labels: ${labels}
spec:
  replicas: ${replicas}
  selector:
    matchLabels:
      app.kubernetes.io/name: ${name}
  template:
    metadata:
      labels: ${labels}
    spec:
      serviceAccountName: ${name}
      containers:
        - name: app
          image: ${image}:${tag}
          ports:
            - name: http
              containerPort: ${port}
          envFrom:
            - configMapRef:
                name: ${name}-config
          resources:
            requests:
              cpu: 250m
              memory: 128Mi
---
apiVersion: v1
kind: Service
metadata:
  name: ${name}
  namespace: ${namespace}
  labels: ${labels}
spec:
  selector:
    app.kubernetes.io/name: ${name}
  ports:
    - name: http
      port: 80
      targetPort: ${port}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: ${name}
  namespace: ${namespace}
  labels: ${labels}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: ${name}
  minReplicas: ${replicas}
  maxReplicas: ${replicas}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ${name}
  namespace: ${namespace}
  labels: ${labels}
spec:
  ingressClassName: internal
  rules:
    - host: ${name}.${namespace}.internal
      http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: ${name}
                port:
                  name: http
"#,
    ),
    (
        "patches/10-autoscaling.kpatch",
        r#"[horizontalpodautoscaler.${name}]
spec.maxReplicas: ${autoscaling.maxReplicas}
spec.metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: "${autoscaling.cpu}"}}}]
"#,
    ),
    (
        "patches/10-autoscaling.yaml",
        "description: scale on CPU between replicas and autoscaling.maxReplicas\n\
         enabled: ${autoscaling.enabled}\n",
    ),
    (
        "patches/20-ingress.kpatch",
        r#"[ingress.${name}]
metadata.annotations.cert-manager.io/cluster-issuer: letsencrypt
spec.ingressClassName: public
spec.rules[0].host: ${ingress.host}
spec.tls: [{hosts: ["${ingress.host}"], secretName: "${name}-tls"}]
"#,
    ),
    (
        "patches/20-ingress.yaml",
        "description: expose the app publicly, with TLS\nenabled: ${ingress.enabled}\n",
    ),
    (
        "patches/30-frontend.kpatch",
        "[deployment.${name}.containers.name=app]\nresources.requests.cpu: 100m\n",
    ),
    (
        "patches/30-frontend.yaml",
        "description: frontends need less CPU\nenabled: ${frontend}\n",
    ),
];

impl KurelFleet {
    /// The values file of `spec`.
    pub fn values(spec: &AppSpec) -> String {
        let mut s = String::with_capacity(512);
        // `writeln!` into a String cannot fail.
        let _ = writeln!(s, "name: {}", spec.name);
        let _ = writeln!(s, "namespace: {}", spec.namespace);
        let _ = writeln!(s, "image: {}", spec.image);
        let _ = writeln!(s, "tag: \"{}\"", spec.tag);
        let _ = writeln!(s, "replicas: {}", spec.replicas);
        let _ = writeln!(s, "port: {}", spec.port);
        let _ = writeln!(s, "team: {}", spec.team);
        let _ = writeln!(s, "tier: {}", spec.tier);
        let _ = writeln!(s, "frontend: {}", spec.tier == "frontend");
        let _ = writeln!(s, "logLevel: {}", spec.log_level);
        let _ = writeln!(s, "regions: {}", spec.regions.join(","));
        let _ = writeln!(s, "labels:");
        let _ = writeln!(s, "  cost-center: {}", spec.cost_center);
        let _ = writeln!(s, "ingress:");
        let _ = writeln!(s, "  enabled: {}", spec.ingress);
        let _ = writeln!(s, "  host: {}.example.com", spec.name);
        let _ = writeln!(s, "autoscaling:");
        let _ = writeln!(s, "  enabled: {}", spec.autoscaling);
        let _ = writeln!(s, "  maxReplicas: {}", spec.max_replicas);
        let _ = writeln!(s, "  cpu: {}", spec.cpu_target);
        s
    }
}

impl Fleet for KurelFleet {
    fn name(&self) -> &'static str {
        "kurel"
    }

    fn unit(&self) -> String {
        format!(
            "instance (values file) of a {KUREL_OBJECTS}-resource kurel package with 3 \
             conditional patches"
        )
    }

    fn generate(&self, n: usize) -> Result<Generated, String> {
        let mut files: Vec<GenFile> = KUREL_PACKAGE_FILES
            .iter()
            .map(|(path, text)| GenFile {
                path: format!("{KUREL_PACKAGE}/{path}"),
                text: (*text).to_string(),
            })
            .collect();
        let mut apps = Vec::with_capacity(n);
        for i in 0..n {
            let spec = AppSpec::of(i);
            let path = format!("{KUREL_INSTANCES}/{}.yaml", spec.name);
            files.push(GenFile {
                path: path.clone(),
                text: Self::values(&spec),
            });
            // One process per instance: what a GitOps plugin call on one app costs.
            apps.push(vec![
                "render".into(),
                KUREL_PACKAGE.into(),
                "--values".into(),
                path,
            ]);
        }
        Ok(Generated {
            files,
            batch: vec![Invocation {
                args: vec![
                    "render".into(),
                    KUREL_PACKAGE.into(),
                    "--instances".into(),
                    KUREL_INSTANCES.into(),
                ],
                in_process: Some(InProcess::KurelInstances {
                    package: KUREL_PACKAGE.into(),
                    instances: KUREL_INSTANCES.into(),
                }),
            }],
            apps,
            objects_per_app: vec![KUREL_OBJECTS; n],
            kustomize: None,
        })
    }
}

/// Evenly spaced indices of `sample` units out of `n` (all of them when `n <= sample`), so a
/// sample sees the same mix of optional resources as the fleet.
pub fn sample_indices(n: usize, sample: usize) -> Vec<usize> {
    if n <= sample || sample == 0 {
        return (0..n).collect();
    }
    (0..sample).map(|k| k * n / sample).collect()
}

/// The fleet directory of a fleet of size `n` under the scratch directory.
pub fn fleet_dir(scratch: &Path, fleet: &str, n: usize) -> PathBuf {
    scratch.join(format!("{fleet}-{n}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_core::document::{parse_file, YamlLimits};
    use kiln_core::pipeline;

    fn render_in_memory(g: &Generated) -> Vec<serde_json::Value> {
        let mut docs = Vec::new();
        for f in &g.files {
            docs.extend(
                parse_file(&f.path, f.text.clone(), &YamlLimits::default())
                    .unwrap_or_else(|d| panic!("{}: {d:?}", f.path)),
            );
        }
        let out = pipeline::render(&docs, &Options::default())
            .unwrap_or_else(|d| panic!("fleet does not render: {:#?}", d.0));
        assert!(out.warnings.is_empty(), "warnings: {:#?}", out.warnings);
        out.objects
    }

    #[test]
    fn webapp_fleet_renders_with_the_expected_objects() {
        let g = WebApp.generate(5).expect("web-app fleet generates");
        assert_eq!(g.apps.len(), 5);
        let objects = render_in_memory(&g);
        assert_eq!(objects.len(), g.objects());
        // The optional resources and regions vary across the sample, so a generator that stops
        // varying them (and so under-measures the engine) is caught.
        let kinds: std::collections::BTreeSet<&str> =
            objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        for k in [
            "ServiceAccount",
            "ConfigMap",
            "Deployment",
            "Service",
            "HorizontalPodAutoscaler",
            "Ingress",
        ] {
            assert!(kinds.contains(k), "no {k} in a fleet of 5: {kinds:?}");
        }
    }

    #[test]
    fn one_app_renders_alone_with_its_object_count() {
        let g = WebApp.generate(3).expect("web-app fleet generates");
        for (i, args) in g.apps.iter().enumerate() {
            let picked = WebApp::generate(&WebApp, 3)
                .expect("generates")
                .files
                .into_iter()
                .filter(|f| args.contains(&f.path))
                .collect::<Vec<_>>();
            assert_eq!(picked.len(), 2, "app {i} names the RGD and its instance");
            let one = Generated {
                files: picked,
                ..g.clone()
            };
            assert_eq!(render_in_memory(&one).len(), g.objects_per_app[i]);
        }
    }

    #[test]
    fn component_fleet_renders_with_the_expected_objects() {
        let g = ComponentFleet
            .generate(4)
            .expect("component fleet generates");
        assert_eq!(g.apps.len(), 8, "one unit per component and environment");
        let objects = render_in_memory(&g);
        assert_eq!(objects.len(), g.objects());
    }

    /// Each process of a batch, run in-process as `kiln render` runs it (the request, with its
    /// checks over the whole output: a component's two environments in one stream are
    /// duplicates), renders without an error, and together they render every object. The
    /// component fleet's batch was one `kiln render` of both environments, which kiln refuses.
    #[test]
    fn batch_invocations_render_as_requests() {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        for fleet in [&WebApp as &dyn Fleet, &ComponentFleet] {
            let g = fleet.generate(4).expect("generates");
            let dir = std::env::temp_dir().join(format!(
                "kiln-bench-batch-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            ));
            g.write(&dir).expect("fleet written");
            let mut objects = 0;
            for inv in &g.batch {
                let Some(InProcess::Documents {
                    inputs,
                    environment,
                    ..
                }) = &inv.in_process
                else {
                    panic!("{}: no in-process form", fleet.name());
                };
                let inputs = inputs
                    .iter()
                    .map(|p| kiln_core::source::Input::Path(dir.join(p)))
                    .collect();
                let req = crate::suite::request_of(inputs, environment);
                let out = kiln_core::request::render(&req).unwrap_or_else(|f| {
                    panic!("{}: {:?}: {:#?}", fleet.name(), inv.args, f.diagnostics)
                });
                objects += out.units.iter().map(Vec::len).sum::<usize>();
            }
            let _ = std::fs::remove_dir_all(&dir);
            assert_eq!(objects, g.objects(), "{}", fleet.name());
        }
    }

    /// Issue 6, "done when": `--jobs 1` and `--jobs 4` give identical bytes on the fleet. The
    /// pipeline is run in-process in thread pools of both sizes (the CLI's `--jobs` sizes the same
    /// rayon pool), and the YAML the CLI would print is compared.
    #[test]
    fn fleets_render_to_identical_bytes_with_1_and_4_threads() {
        for fleet in [&WebApp as &dyn Fleet, &ComponentFleet] {
            let g = fleet.generate(40).expect("generates");
            let yaml_with = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .stack_size(16 << 20)
                    .build()
                    .expect("thread pool");
                let objects = pool.install(|| render_in_memory(&g));
                kiln_core::output::yaml_stream(&objects).expect("serialises")
            };
            let one = yaml_with(1);
            assert!(!one.is_empty());
            assert!(
                one == yaml_with(4),
                "{}: output depends on threads",
                fleet.name()
            );
        }
    }

    /// The kurel fleet written to a fresh directory and rendered through `kiln_core::kurel` as
    /// `kiln render PKG --instances DIR` does, in a pool of `threads` workers; the YAML stream.
    fn render_kurel(g: &Generated, threads: usize) -> String {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kiln-bench-kurel-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        g.write(&dir).expect("fleet written");
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("thread pool");
        let yaml = pool.install(|| {
            let pkg = kiln_core::kurel::load(&dir.join(KUREL_PACKAGE))
                .unwrap_or_else(|e| panic!("package loads: {:#?}", e.diagnostics.0));
            let root = kiln_core::source::Root::new(&dir).expect("root");
            let (docs, _, diags) = kiln_core::kurel::values::read_instances_dir(
                &root,
                KUREL_INSTANCES,
                &YamlLimits::default(),
            );
            assert!(diags.is_empty(), "{diags:#?}");
            let prepared =
                kiln_core::kurel::Prepared::new(&pkg, &Default::default(), &Default::default())
                    .expect("prepared");
            let out = kiln_core::kurel::render_instances(&prepared, docs, Ok)
                .unwrap_or_else(|d| panic!("kurel fleet does not render: {:#?}", d.0));
            assert!(out.warnings.is_empty(), "warnings: {:#?}", out.warnings);
            assert_eq!(out.objects, g.objects());
            let objects: Vec<serde_json::Value> = out.units.into_iter().flatten().collect();
            kiln_core::output::yaml_stream(&objects).expect("serialises")
        });
        let _ = std::fs::remove_dir_all(&dir);
        yaml
    }

    #[test]
    fn kurel_fleet_renders_with_the_expected_objects_and_patches() {
        let g = KurelFleet.generate(40).expect("kurel fleet generates");
        assert_eq!(g.apps.len(), 40);
        let yaml = render_kurel(&g, 4);
        assert_eq!(crate::suite::count_documents(yaml.as_bytes()), g.objects());
        // Each conditional patch applies to some instances and not to others, so the fleet
        // exercises enablement as the web-app fleet exercises includeWhen.
        let deployments = yaml.matches("kind: Deployment").count();
        for (applied, what) in [
            (yaml.matches("averageUtilization").count(), "autoscaling"),
            (yaml.matches("secretName").count(), "ingress"),
            (yaml.matches("cpu: 100m").count(), "frontend"),
        ] {
            assert!(
                applied > 0 && applied < deployments,
                "{what} applied to {applied} of {deployments}"
            );
        }
        assert!(
            yaml == render_kurel(&g, 1),
            "kurel fleet: output depends on threads"
        );
    }

    #[test]
    fn generation_is_deterministic_and_averages_seven_objects() {
        assert_eq!(AppSpec::of(42), AppSpec::of(42));
        let total: usize = (0..10_000).map(|i| AppSpec::of(i).objects()).sum();
        // The issue sizes the 10 000-instance fleet at about 70 000 objects.
        assert!((65_000..=75_000).contains(&total), "{total}");
    }

    #[test]
    fn the_rgd_has_the_stated_number_of_expressions() {
        let mut seen = std::collections::BTreeSet::new();
        for line in WEBAPP_RGD.lines() {
            for m in kiln_core::expr::scan::scan(line).expect("scans") {
                seen.insert(m.expr);
            }
        }
        assert_eq!(seen.len(), WEBAPP_EXPRESSIONS, "{seen:#?}");
    }

    #[test]
    fn samples_are_spread_over_the_fleet() {
        assert_eq!(sample_indices(5, 200), vec![0, 1, 2, 3, 4]);
        let s = sample_indices(10_000, 200);
        assert_eq!(s.len(), 200);
        assert_eq!(s[1], 50);
        assert_eq!(*s.last().expect("non-empty"), 9_950);
    }
}
