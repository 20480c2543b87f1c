//! The kustomize tree equivalent to the web-app fleet, and how to find `kubectl kustomize`.
//!
//! The tree is what a platform team would write without kiln: a base (ServiceAccount, Deployment,
//! Service), a component each for the optional HPA and Ingress, and one overlay per app that sets
//! its names (namePrefix), namespace, image, replicas and labels, generates its ConfigMaps (one for
//! settings, one per region) and patches the per-app port, CPU request, HPA bounds and host. Every
//! overlay builds to the same kinds and number of objects as the matching kiln instance, so the two
//! tools do the same work.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::apps::{AppSpec, GenFile};

/// Where the tree lives, relative to the fleet directory.
pub const KUSTOMIZE_DIR: &str = "kustomize";

/// A generated kustomize tree.
#[derive(Debug, Clone)]
pub struct KustomizeTree {
    /// Files (paths relative to the fleet directory).
    pub files: Vec<GenFile>,
    /// Overlay directories relative to the fleet directory; overlay `i` is app `i`.
    pub overlays: Vec<String>,
}

const BASE_KUSTOMIZATION: &str = "\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - serviceaccount.yaml
  - deployment.yaml
  - service.yaml
";

const BASE_SERVICE_ACCOUNT: &str = "\
apiVersion: v1
kind: ServiceAccount
metadata:
  name: web
";

const BASE_DEPLOYMENT: &str = "\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
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
          image: app
          ports:
            - name: http
              containerPort: 8080
          envFrom:
            - configMapRef:
                name: config
          resources:
            requests:
              cpu: 250m
              memory: 128Mi
";

const BASE_SERVICE: &str = "\
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app.kubernetes.io/name: web
  ports:
    - name: http
      port: 80
      targetPort: 8080
";

const HPA_COMPONENT: &str = "\
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
  - hpa.yaml
";

const HPA: &str = "\
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  minReplicas: 2
  maxReplicas: 10
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: 80
";

const INGRESS_COMPONENT: &str = "\
apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
  - ingress.yaml
";

const INGRESS: &str = "\
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  rules:
    - host: example.com
      http:
        paths:
          - path: /
            pathType: Prefix
            backend:
              service:
                name: web
                port:
                  name: http
";

/// The kustomize tree for these apps.
pub fn webapp_tree(specs: &[AppSpec]) -> KustomizeTree {
    let shared = [
        ("base/kustomization.yaml", BASE_KUSTOMIZATION),
        ("base/serviceaccount.yaml", BASE_SERVICE_ACCOUNT),
        ("base/deployment.yaml", BASE_DEPLOYMENT),
        ("base/service.yaml", BASE_SERVICE),
        ("components/hpa/kustomization.yaml", HPA_COMPONENT),
        ("components/hpa/hpa.yaml", HPA),
        ("components/ingress/kustomization.yaml", INGRESS_COMPONENT),
        ("components/ingress/ingress.yaml", INGRESS),
    ];
    let mut files: Vec<GenFile> = shared
        .iter()
        .map(|(p, t)| GenFile {
            path: format!("{KUSTOMIZE_DIR}/{p}"),
            text: (*t).to_string(),
        })
        .collect();
    let mut overlays = Vec::with_capacity(specs.len());
    for spec in specs {
        let dir = format!("{KUSTOMIZE_DIR}/overlays/{}", spec.name);
        files.push(GenFile {
            path: format!("{dir}/kustomization.yaml"),
            text: overlay(spec),
        });
        overlays.push(dir);
    }
    KustomizeTree { files, overlays }
}

/// One app's overlay.
pub fn overlay(spec: &AppSpec) -> String {
    let mut s = String::with_capacity(2048);
    // `writeln!` into a String cannot fail.
    let _ = writeln!(s, "apiVersion: kustomize.config.k8s.io/v1beta1");
    let _ = writeln!(s, "kind: Kustomization");
    let _ = writeln!(s, "namespace: {}", spec.namespace);
    let _ = writeln!(s, "namePrefix: {}-", spec.name);
    let _ = writeln!(s, "resources:\n  - ../../base");
    if spec.autoscaling || spec.ingress {
        let _ = writeln!(s, "components:");
        if spec.autoscaling {
            let _ = writeln!(s, "  - ../../components/hpa");
        }
        if spec.ingress {
            let _ = writeln!(s, "  - ../../components/ingress");
        }
    }
    let _ = writeln!(s, "labels:");
    let _ = writeln!(s, "  - pairs:");
    let _ = writeln!(s, "      app.kubernetes.io/name: {}", spec.name);
    let _ = writeln!(s, "    includeSelectors: true");
    let _ = writeln!(s, "  - pairs:");
    let _ = writeln!(s, "      team: {}", spec.team);
    let _ = writeln!(s, "      cost-center: {}", spec.cost_center);
    let _ = writeln!(s, "images:");
    let _ = writeln!(s, "  - name: app");
    let _ = writeln!(s, "    newName: {}", spec.image);
    let _ = writeln!(s, "    newTag: \"{}\"", spec.tag);
    let _ = writeln!(s, "replicas:");
    let _ = writeln!(s, "  - name: web");
    let _ = writeln!(s, "    count: {}", spec.replicas);
    let _ = writeln!(s, "configMapGenerator:");
    let _ = writeln!(s, "  - name: config");
    let _ = writeln!(s, "    literals:");
    let _ = writeln!(s, "      - LOG_LEVEL={}", spec.log_level);
    let _ = writeln!(s, "      - PORT={}", spec.port);
    let _ = writeln!(s, "      - REGIONS={}", spec.regions.join(","));
    for r in &spec.regions {
        let _ = writeln!(s, "  - name: region-{r}");
        let _ = writeln!(s, "    literals:");
        let _ = writeln!(s, "      - region={r}");
        let _ = writeln!(s, "      - endpoint=https://{r}.example.com");
    }
    let cpu = if spec.tier == "frontend" {
        "100m"
    } else {
        "250m"
    };
    let _ = writeln!(s, "patches:");
    let _ = writeln!(s, "  - target: {{kind: Deployment, name: web}}");
    let _ = writeln!(s, "    patch: |-");
    let _ = writeln!(s, "      - op: replace");
    let _ = writeln!(
        s,
        "        path: /spec/template/spec/containers/0/ports/0/containerPort"
    );
    let _ = writeln!(s, "        value: {}", spec.port);
    let _ = writeln!(s, "      - op: replace");
    let _ = writeln!(
        s,
        "        path: /spec/template/spec/containers/0/resources/requests/cpu"
    );
    let _ = writeln!(s, "        value: {cpu}");
    let _ = writeln!(s, "  - target: {{kind: Service, name: web}}");
    let _ = writeln!(s, "    patch: |-");
    let _ = writeln!(s, "      - op: replace");
    let _ = writeln!(s, "        path: /spec/ports/0/targetPort");
    let _ = writeln!(s, "        value: {}", spec.port);
    if spec.autoscaling {
        let _ = writeln!(
            s,
            "  - target: {{kind: HorizontalPodAutoscaler, name: web}}"
        );
        let _ = writeln!(s, "    patch: |-");
        let _ = writeln!(s, "      - op: replace");
        let _ = writeln!(s, "        path: /spec/minReplicas");
        let _ = writeln!(s, "        value: {}", spec.replicas);
        let _ = writeln!(s, "      - op: replace");
        let _ = writeln!(s, "        path: /spec/maxReplicas");
        let _ = writeln!(s, "        value: {}", spec.max_replicas);
        let _ = writeln!(s, "      - op: replace");
        let _ = writeln!(
            s,
            "        path: /spec/metrics/0/resource/target/averageUtilization"
        );
        let _ = writeln!(s, "        value: {}", spec.cpu_target);
    }
    if spec.ingress {
        let _ = writeln!(s, "  - target: {{kind: Ingress, name: web}}");
        let _ = writeln!(s, "    patch: |-");
        let _ = writeln!(s, "      - op: replace");
        let _ = writeln!(s, "        path: /spec/rules/0/host");
        let _ = writeln!(s, "        value: {}.example.com", spec.name);
    }
    s
}

/// Check that `kubectl kustomize` can run, returning kubectl's client version line, or why not.
pub fn probe_kubectl(kubectl: &Path) -> Result<String, String> {
    let out = Command::new(kubectl)
        .args(["version", "--client"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", kubectl.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} version --client failed: {}",
            kubectl.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    // "Client Version: v1.32.4" / "Kustomize Version: v5.5.0": both matter for the figures.
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_core::document::{parse_file, YamlLimits};
    use std::collections::BTreeSet;

    /// Resolve `rel` against `dir`, both `/`-separated and relative to the fleet directory.
    fn join(dir: &str, rel: &str) -> String {
        let mut parts: Vec<&str> = dir.split('/').collect();
        for p in rel.split('/') {
            match p {
                ".." => {
                    parts.pop();
                }
                "." => {}
                p => parts.push(p),
            }
        }
        parts.join("/")
    }

    #[test]
    fn tree_for_two_apps_is_well_formed_yaml_with_resolvable_references() {
        let specs: Vec<AppSpec> = (0..2).map(AppSpec::of).collect();
        let tree = webapp_tree(&specs);
        assert_eq!(tree.overlays.len(), 2);
        let paths: BTreeSet<&str> = tree.files.iter().map(|f| f.path.as_str()).collect();
        for f in &tree.files {
            let docs = parse_file(&f.path, f.text.clone(), &YamlLimits::default())
                .unwrap_or_else(|d| panic!("{} is not valid YAML: {d:?}\n{}", f.path, f.text));
            assert_eq!(docs.len(), 1, "{}", f.path);
            let v = &docs[0].value;
            assert!(v["kind"].is_string(), "{} has no kind", f.path);
            if !f.path.ends_with("kustomization.yaml") {
                continue;
            }
            let dir = f.path.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
            for key in ["resources", "components"] {
                for r in v[key].as_array().into_iter().flatten() {
                    let r = r.as_str().expect("paths are strings");
                    let target = join(dir, r);
                    let ok = paths.contains(target.as_str())
                        || paths.contains(format!("{target}/kustomization.yaml").as_str());
                    assert!(ok, "{}: {key} entry {r} resolves to nothing", f.path);
                }
            }
        }
    }

    #[test]
    fn overlays_carry_the_per_app_settings() {
        let spec = AppSpec::of(7);
        let text = overlay(&spec);
        let v = &parse_file("o.yaml", text, &YamlLimits::default()).expect("parses")[0].value;
        assert_eq!(v["namePrefix"], format!("{}-", spec.name));
        assert_eq!(v["namespace"], spec.namespace.as_str());
        assert_eq!(v["images"][0]["newTag"], spec.tag.as_str());
        assert_eq!(v["replicas"][0]["count"], spec.replicas);
        // One generator for settings plus one per region, as the RGD's forEach.
        assert_eq!(
            v["configMapGenerator"].as_array().map(Vec::len),
            Some(1 + spec.regions.len())
        );
        let components = v["components"].as_array().map(Vec::len).unwrap_or(0);
        assert_eq!(
            components,
            usize::from(spec.autoscaling) + usize::from(spec.ingress)
        );
    }
}
