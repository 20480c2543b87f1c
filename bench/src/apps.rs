//! What the generated fleets share: a generated file, and the attributes of web-app instance
//! *i* ([`AppSpec`]), from which both the kiln fleet ([`crate::fleet`]) and its kustomize
//! equivalent ([`crate::kustomize`]) are written, so neither imports the other's module back.

/// One generated file, with a path relative to the fleet directory (always `/`-separated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenFile {
    /// Relative path, e.g. `kiln/apps/app-00042.yaml`.
    pub path: String,
    /// Content.
    pub text: String,
}

/// splitmix64: a well-mixed 64-bit hash of the index, so neighbouring instances differ in every
/// attribute rather than in a visible pattern.
pub fn mix(i: u64) -> u64 {
    let mut z = i.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Regions an instance may deploy to; each instance takes 1 to 3 of them.
pub const REGIONS: [&str; 3] = ["eu-west-1", "us-east-1", "ap-south-1"];

/// The attributes of web-app instance `i`: one source of truth for the kiln instance, the
/// kustomize overlay and the expected object count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSpec {
    /// `app-00042`.
    pub name: String,
    /// Namespace the app is deployed in.
    pub namespace: String,
    /// Image repository (no tag).
    pub image: String,
    /// Image tag.
    pub tag: String,
    /// Deployment replicas (and the HPA's minimum).
    pub replicas: u64,
    /// Container port.
    pub port: u64,
    /// Owning team (a label).
    pub team: String,
    /// `frontend` or `backend`: picks the CPU request.
    pub tier: &'static str,
    /// `LOG_LEVEL` of the app's ConfigMap.
    pub log_level: &'static str,
    /// Regions, 1 to 3, each giving one ConfigMap.
    pub regions: Vec<&'static str>,
    /// Extra labels on every object.
    pub cost_center: String,
    /// Whether the Ingress is rendered.
    pub ingress: bool,
    /// Whether the HorizontalPodAutoscaler is rendered.
    pub autoscaling: bool,
    /// HPA maximum.
    pub max_replicas: u64,
    /// HPA CPU target (percent).
    pub cpu_target: u64,
}

impl AppSpec {
    /// The spec of instance `i`.
    pub fn of(i: usize) -> Self {
        let h = mix(i as u64);
        let replicas = 1 + h % 5;
        let n_regions = 1 + (i % 3);
        let first = ((h >> 20) % 3) as usize;
        AppSpec {
            name: format!("app-{i:05}"),
            namespace: format!("team-{:02}", i % 16),
            image: format!("ghcr.io/example/service-{}", i % 37),
            tag: format!("1.{}.{}", (h >> 8) % 10, (h >> 12) % 20),
            replicas,
            port: 8000 + (h >> 16) % 100,
            team: format!("team-{:02}", i % 16),
            tier: if (h >> 24) & 1 == 0 {
                "frontend"
            } else {
                "backend"
            },
            log_level: ["info", "debug", "warn"][((h >> 28) % 3) as usize],
            regions: (0..n_regions).map(|k| REGIONS[(first + k) % 3]).collect(),
            cost_center: format!("cc-{}", (h >> 32) % 7),
            // Two independent bits: about half the fleet has an Ingress, about half an HPA.
            ingress: (h >> 40) & 1 == 0,
            autoscaling: (h >> 41) & 1 == 0,
            max_replicas: replicas * 3,
            cpu_target: 60 + (h >> 44) % 31,
        }
    }

    /// Objects this instance renders to: ServiceAccount, ConfigMap, Deployment, Service, the
    /// optional HPA and Ingress, and one ConfigMap per region.
    pub fn objects(&self) -> usize {
        4 + usize::from(self.ingress) + usize::from(self.autoscaling) + self.regions.len()
    }
}
