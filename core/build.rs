//! Decompresses the bundled Kubernetes schemas at build time.
//!
//! The repository keeps them gzipped (`data/kubernetes/definitions.json.gz`, 250 KB instead of
//! 1.4 MB); the binary embeds the plain JSON so a run does not pay for inflating it on every
//! start, which was most of a small app's start-up.

use std::io::Read;
use std::path::PathBuf;

fn main() {
    let src = "data/kubernetes/definitions.json.gz";
    println!("cargo:rerun-if-changed={src}");
    let gz = std::fs::read(src).expect("read the bundled schemas");
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(gz.as_slice())
        .read_to_end(&mut text)
        .expect("the bundled schemas are valid gzip");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("definitions.json"), text).expect("write OUT_DIR/definitions.json");
}
