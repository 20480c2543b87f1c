//! `kiln-cmp discover`: whether an application opted in to discovery.
//!
//! Argo CD runs plugin discovery for every Application that names no source type, and, when a
//! plugin configures discovery, for Applications that name it too (util/app/discovery/
//! discovery.go, `cmpSupports`). Matching on content would take over directories that are not
//! kiln's to render (a plain directory of ResourceGraphDefinitions meant for the in-cluster kro
//! controller would lose them from its manifests, and auto-prune would delete them), and would
//! refuse named Applications whose inputs the text match misses. So the shipped
//! `plugin.yaml` configures no discovery, and the opt-in is an explicit marker: a file named
//! [`MARKER`] in the application directory, which Argo CD can match itself with
//! `discover.fileName: .kiln-cmp`. This command answers the same question, for a configuration
//! that uses `discover.find.command` instead: it prints the marker when it is there.

use std::path::Path;

/// The file an application directory holds to opt in to discovery (hidden: kiln never reads it
/// as an input).
pub const MARKER: &str = ".kiln-cmp";

/// The marker, if the application directory `dir` holds one (as Argo CD's `fileName` glob
/// matches it: any entry of that name, found with lstat).
pub fn discover(dir: &Path) -> Option<String> {
    std::fs::symlink_metadata(dir.join(MARKER))
        .ok()
        .map(|_| MARKER.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_marker_opts_in() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(
            d.join("rgd.yaml"),
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\n",
        )
        .unwrap();
        assert_eq!(discover(d), None);
        std::fs::write(d.join(MARKER), "").unwrap();
        assert_eq!(discover(d).as_deref(), Some(MARKER));
    }
}
