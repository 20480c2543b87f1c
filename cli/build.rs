//! Links the `kiln` executable position-dependent (`-no-pie`) on GNU/Linux.
//!
//! A position-independent executable is relocated by the dynamic loader at every start: about
//! 60 000 pointers, which touches (and copies) several hundred pages before `main` runs. That was
//! 2 ms of the 15 ms a small app took end to end, the latency an Argo CD refresh sees. A
//! position-dependent executable needs none of it. The price is that the executable's own code
//! and data are not address-randomised (libraries, heap and stacks still are); kiln is safe Rust
//! apart from its dependencies' audited unsafe code, so the trade is made for latency. Set
//! `KILN_PIE=1` at build time to keep the default position-independent link.

fn main() {
    println!("cargo:rerun-if-env-changed=KILN_PIE");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" && std::env::var_os("KILN_PIE").is_none() {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
