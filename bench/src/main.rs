//! `kiln-bench`: generates a synthetic fleet and prints measured figures (see bench/README.md).

fn main() {
    eprintln!("kiln-bench: not implemented yet");
    std::process::exit(1);
}
