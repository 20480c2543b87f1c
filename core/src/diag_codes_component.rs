// Codes of the component-type front-end (KLN6xxx; see docs/errors.md).
code_table! { COMPONENT;
    /// A component-types document (definition, addon, component, workload, deployment or snapshot)
    /// has a missing field or a field of the wrong shape.
    COMPONENT_INVALID = "KLN6001", "component-invalid";
    /// A shorthand schema (`spec.schema`) or an `openAPIV3Schema` section is invalid.
    SHORTHAND_SCHEMA = "KLN6002", "shorthand-schema";
    /// A Component names a ComponentTypeDefinition that is not among the inputs.
    UNKNOWN_COMPONENT_TYPE = "KLN6003", "unknown-component-type";
    /// A Component names an Addon that is not among the inputs.
    UNKNOWN_ADDON = "KLN6004", "unknown-addon";
    /// Component or addon parameters do not satisfy the schema (type, required, enum, bounds…).
    PARAMETER_INVALID = "KLN6005", "parameter-invalid";
    /// An environment overrides a field that is not declared in `envOverrides`, or an addon
    /// instance the component does not have.
    OVERRIDE_NOT_ALLOWED = "KLN6006", "override-not-allowed";
    /// A ComponentTypeDefinition breaks the workload-type constraint (exactly one primary resource
    /// whose id is the workloadType).
    WORKLOAD_TYPE = "KLN6007", "workload-type";
    /// Two addon instances of one Component share an instanceName.
    DUPLICATE_INSTANCE = "KLN6008", "duplicate-instance";
    /// Two documents define the same thing (definition, addon, workload, deployment, snapshot).
    DUPLICATE_DEFINITION = "KLN6009", "duplicate-definition";
    /// A Component has no Workload (a warning unless it is asked for by name or `--strict`: upstream
    /// renders nothing for it until its Workload exists, and the other components).
    MISSING_WORKLOAD = "KLN6010", "missing-workload";
    /// An addon patch or remove matched no resource.
    PATCH_TARGET = "KLN6011", "patch-target";
    /// A patch path is malformed, or a filter or wildcard in it matched nothing.
    PATCH_PATH = "KLN6012", "patch-path";
    /// A patch operation failed (missing parent, index out of range, wrong value type).
    PATCH_FAILED = "KLN6013", "patch-failed";
    /// A ComponentEnvSnapshot's digest is missing or does not match its content.
    SNAPSHOT_DIGEST = "KLN6014", "snapshot-digest";
    /// No environment to render for, or a component given both live and as a snapshot.
    ENVIRONMENT = "KLN6015", "environment";
    /// A rendered resource is not a Kubernetes object (apiVersion, kind, metadata.name).
    RESOURCE_INVALID = "KLN6016", "resource-invalid";
    /// Two rendered resources of one release have the same kind, apiVersion, namespace and name.
    DUPLICATE_RESOURCE = "KLN6017", "duplicate-resource";
    /// A Component has no namespace and none was given with --namespace.
    COMPONENT_NAMESPACE = "KLN6018", "component-namespace";
    /// A ComponentDeployment, snapshot or command names a component that is not among the inputs.
    UNKNOWN_COMPONENT = "KLN6019", "unknown-component";
    /// `kiln promote` refused: the working tree has uncommitted changes.
    DIRTY_TREE = "KLN6020", "dirty-tree";
    /// `kiln promote` or `kiln snapshot create` could not read or write the repository or files.
    PROMOTE_FAILED = "KLN6021", "promote-failed";
    /// A binding's `releaseName` names no ComponentRelease of its component among the inputs, or a
    /// component has several releases and nothing says which to render.
    RELEASE_REF = "KLN6022", "release-ref";
    /// A rendered resource does not fit the Kubernetes schema of its kind (built-in, or a CRD of
    /// the run): an unknown field, a wrong type, a value outside an enum.
    COMPONENT_SCHEMA = "KLN6023", "component-schema";
    /// An upstream-kind render needs a platform object that is not among the inputs (or
    /// `--observed`): the Environment, its DataPlane, the Project, a SecretReference, or the uid
    /// of one of them.
    PLATFORM_INPUT = "KLN6024", "platform-input";
    /// A ComponentType or Trait `validations` rule evaluated to false (or not to a bool).
    VALIDATION_FAILED = "KLN6025", "validation-failed";
    /// A definition uses a feature of upstream OpenChoreo that kiln does not implement; refused
    /// rather than ignored, because upstream's controller would render something for it.
    UNSUPPORTED_FEATURE = "KLN6026", "unsupported-feature";
    /// Warning: an input upstream's controller accepts and ignores (a ReleaseBinding's
    /// `traitEnvironmentConfigs` for an embedded trait's instance, a parameter field the schema
    /// does not declare); kiln does what upstream does, and says so.
    IGNORED_INPUT = "KLN6027", "ignored-input";
    /// Warning: an endpoint's API schema gives no routes for `workload.toEndpointResources`
    /// (it does not parse, refers outside itself, or has a type without an extractor).
    ENDPOINT_SCHEMA = "KLN6028", "endpoint-schema";
}
