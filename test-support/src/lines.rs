//! The command lines of the orchestrators the doors are tested under, spelt once: kpt running
//! kiln-krm as an exec function, and kiln-flux previewing a Flux Kustomization.

use std::path::Path;

use crate::Cmd;

/// `kpt fn eval PKG --exec EXE` in `dir`, with an empty input; add `--fn-config FILE`,
/// `--results-dir DIR` or `-- key=value…` with [`Cmd::args`].
pub fn kpt_eval(kpt: &Path, dir: &Path, pkg: &str, exe: &Path) -> Cmd {
    let mut c = Cmd::new(kpt);
    c.args(["fn", "eval", pkg, "--exec"])
        .arg(exe)
        .dir(dir)
        .stdin("");
    c
}

/// `kpt fn render PKG… --allow-exec` in `dir`, with an empty input (kpt finds the exec
/// functions its Kptfiles name on `PATH`: set it with [`Cmd::env`]).
pub fn kpt_render(kpt: &Path, dir: &Path, pkgs: &[&str]) -> Cmd {
    let mut c = Cmd::new(kpt);
    c.args(["fn", "render"])
        .args(pkgs)
        .arg("--allow-exec")
        .dir(dir)
        .stdin("");
    c
}

/// kiln-flux's arguments for what a Flux Kustomization would apply:
/// `build --kustomization KS --source-root ROOT REST…`.
pub fn flux_preview<'a>(ks: &'a str, root: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["build", "--kustomization", ks, "--source-root", root];
    a.extend_from_slice(rest);
    a
}
