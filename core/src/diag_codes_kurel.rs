// Codes of the kurel package front-end (KLN7xxx; see docs/errors.md).
code_table! { KUREL;
    /// The package directory cannot be used: no `parameters.yaml` or `kurel.yaml`, a file that is
    /// not a mapping, or a layout entry of the wrong kind.
    KUREL_PACKAGE = "KLN7001", "kurel-package";
    /// Package metadata (`kurel:`) is missing a required field or has an invalid one.
    KUREL_METADATA = "KLN7002", "kurel-metadata";
    /// A warning about package metadata: unknown keys, or a prototype-style `kurel.yaml` that is
    /// ignored or incomplete.
    KUREL_METADATA_WARNING = "KLN7003", "kurel-metadata-warning";
    /// `parameters.yaml` is not a mapping, or `global:` is not a mapping.
    KUREL_PARAMETERS = "KLN7004", "kurel-parameters";
    /// A resource document is not a Kubernetes object (mapping with apiVersion, kind, metadata.name).
    KUREL_RESOURCE = "KLN7005", "kurel-resource";
    /// A `${…}` reference that is not a plain variable path: inline default, expression, unterminated.
    KUREL_VARIABLE_SYNTAX = "KLN7006", "kurel-variable-syntax";
    /// A `${path}` names a parameter that does not exist.
    KUREL_VARIABLE_UNDEFINED = "KLN7007", "kurel-variable-undefined";
    /// Parameters reference each other in a cycle.
    KUREL_VARIABLE_CYCLE = "KLN7008", "kurel-variable-cycle";
    /// A chain of nested references is deeper than the maximum depth (default 10).
    KUREL_VARIABLE_DEPTH = "KLN7009", "kurel-variable-depth";
    /// A variable's value cannot be used where it is referenced (a map or list inside text, a
    /// non-string map key).
    KUREL_VARIABLE_TYPE = "KLN7010", "kurel-variable-type";
    /// A `.kpatch` file does not parse.
    KUREL_KPATCH_SYNTAX = "KLN7011", "kurel-kpatch-syntax";
    /// A YAML patch file has the wrong shape.
    KUREL_PATCH_YAML = "KLN7012", "kurel-patch-yaml";
    /// Patch metadata (sidecar `NAME.yaml`, `# kurel:` header lines) is invalid.
    KUREL_PATCH_METADATA = "KLN7013", "kurel-patch-metadata";
    /// A patch's `enabled` is not `true`, `false` or a single boolean variable.
    KUREL_PATCH_ENABLED = "KLN7014", "kurel-patch-enabled";
    /// `requires` or `conflicts` names a patch that does not exist, is ambiguous, or is the patch
    /// itself.
    KUREL_PATCH_REFERENCE = "KLN7015", "kurel-patch-reference";
    /// Patches require each other in a cycle.
    KUREL_PATCH_CYCLE = "KLN7016", "kurel-patch-cycle";
    /// Two enabled patches conflict.
    KUREL_PATCH_CONFLICT = "KLN7017", "kurel-patch-conflict";
    /// A patch targets a resource that the package does not have.
    KUREL_PATCH_TARGET = "KLN7018", "kurel-patch-target";
    /// A patch operation failed: no list item matches a selector, an index is out of range, a
    /// path goes through a value of the wrong type.
    KUREL_PATCH_OP = "KLN7019", "kurel-patch-op";
    /// A local extension (`NAME.local.kurel/`) is invalid or tries to replace package content.
    KUREL_LOCAL = "KLN7020", "kurel-local";
    /// A parameter override (local extension, values file, `--set`) changes a value's type or
    /// structure.
    KUREL_OVERRIDE_TYPE = "KLN7021", "kurel-override-type";
    /// A values file or `--set` argument is invalid.
    KUREL_VALUES = "KLN7022", "kurel-values";
    /// A warning: an override sets a top-level parameter that `parameters.yaml` does not declare.
    KUREL_UNKNOWN_PARAMETER = "KLN7023", "kurel-unknown-parameter";
    /// Two rendered resources have the same kind, namespace and name.
    KUREL_DUPLICATE_RESOURCE = "KLN7024", "kurel-duplicate-resource";
    /// A rendered resource does not match its kind's Kubernetes schema.
    KUREL_SCHEMA = "KLN7025", "kurel-schema";
    /// A rendered workload or Service lacks a field Kubernetes requires (selector, containers,
    /// container name or image, port).
    KUREL_INCOMPLETE = "KLN7026", "kurel-incomplete";
    /// A warning about a rendered resource that is valid but probably not what was meant.
    KUREL_ADVICE = "KLN7027", "kurel-advice";
    /// A warning: a prototype-only feature that kiln does not read.
    KUREL_PROTOTYPE = "KLN7028", "kurel-prototype";
    /// A namespace problem: a cluster-scoped resource sets `metadata.namespace`.
    KUREL_NAMESPACE = "KLN7029", "kurel-namespace";
    /// Two instances of a multi-instance render (`--instances DIR`) render an object of the same
    /// group, kind, namespace and name.
    KUREL_INSTANCE_DUPLICATE = "KLN7030", "kurel-instance-duplicate";
}
