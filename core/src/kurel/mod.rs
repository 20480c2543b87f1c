//! kurel packages: parameters, resources, conditional patches and local extensions rendered into
//! manifests. See `docs/kurel.md`.
