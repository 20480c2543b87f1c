//! Links `kiln-cmp` position-dependent on GNU/Linux, for the reason `cli/build.rs` gives: Argo CD
//! starts it up to three times per refresh (discover, parameters, generate), and relocating a
//! position-independent executable was a sizeable part of a small render's wall time. `KILN_PIE=1` keeps the default link.

fn main() {
    println!("cargo:rerun-if-env-changed=KILN_PIE");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" && std::env::var_os("KILN_PIE").is_none() {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
