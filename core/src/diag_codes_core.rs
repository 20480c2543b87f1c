// Codes of the input, kro, expression, graph and evaluation stages (see docs/errors.md).
code_table! { CORE;
    /// A path given on the command line or named by an input does not exist or cannot be read.
    IO_READ = "KLN1001", "io-read";
    /// A path resolves outside the root it was given under (`..`, absolute path, symlink).
    PATH_ESCAPE = "KLN1002", "path-escape";
    /// A file is not valid UTF-8.
    NOT_UTF8 = "KLN1003", "not-utf8";
    /// YAML or JSON that does not parse.
    YAML_SYNTAX = "KLN1004", "yaml-syntax";
    /// A YAML budget was exceeded (depth, documents, aliases, nodes, size).
    YAML_BUDGET = "KLN1005", "yaml-budget";
    /// A document is not a mapping, or lacks a string `apiVersion` or `kind`.
    NOT_AN_OBJECT = "KLN1006", "not-an-object";
    /// A path is neither a regular file nor a directory (device, socket, fifo).
    NOT_A_FILE = "KLN1007", "not-a-file";
    /// A mapping repeats a key (a warning: the last value wins, as in kubectl and kro).
    YAML_DUPLICATE_KEY = "KLN1008", "yaml-duplicate-key";
    /// The rendered output is larger than the output limit; nothing is written.
    OUTPUT_LIMIT = "KLN1009", "output-limit";
    /// A request's options do not fit its inputs: overrides with no package or several, an
    /// unknown Kubernetes version, a flag with nothing to act on.
    REQUEST_INVALID = "KLN1010", "request-invalid";
    /// A document's or rendered object's kind is unknown: a near miss of a defined kind, a kind
    /// a built-in group does not serve, or a kind nothing in the run defines.
    UNKNOWN_KIND = "KLN1011", "unknown-kind";
    /// Two objects of the output have the same apiVersion group, kind, namespace and name.
    DUPLICATE_OBJECT = "KLN1012", "duplicate-object";
    /// An observed object (`--observed`) lacks an identity, or appears twice.
    OBSERVED_INVALID = "KLN1013", "observed-invalid";
    /// A kustomization names a remote base or file (a Git or HTTP URL) and remote references
    /// are not allowed.
    KUSTOMIZE_REMOTE = "KLN1014", "kustomize-remote";
    /// Kustomizations refer to each other in a cycle, or deeper or more often than the bounds of
    /// the path check allow; or a kustomization file cannot be read as YAML.
    KUSTOMIZE_REFERENCES = "KLN1015", "kustomize-references";
    /// kiln-flux: Flux's artifact would leave out what a build rendered (a `.sourceignore`
    /// pattern or source-controller's defaults exclude it): a file kiln generated (a warning),
    /// or everything under a Kustomization's `spec.path`.
    SOURCE_IGNORED = "KLN1017", "source-ignored";
    /// A kustomize build that kiln runs did not finish within its time limit, or printed more
    /// bytes or documents than kiln reads back: it was stopped.
    KUSTOMIZE_BUILD_LIMIT = "KLN1018", "kustomize-build-limit";
    /// A document that passes through does not fit its kind's schema (the bundled Kubernetes
    /// schema, or the CRD of the run): a wrong type, an unknown field, a value outside an enum.
    PASSTHROUGH_SCHEMA = "KLN1020", "passthrough-schema";
    /// `kiln diff`: a revision or repository cannot be read (an unknown revision, a path outside
    /// the repository, a bare repository).
    GIT_REVISION = "KLN1030", "git-revision";

    /// A ResourceGraphDefinition field has the wrong shape or a missing required value.
    RGD_INVALID = "KLN2001", "rgd-invalid";
    /// The schema kind is not UpperCamelCase or the apiVersion has the wrong form.
    RGD_KIND_NAME = "KLN2002", "rgd-kind-name";
    /// A SimpleSchema type or marker is invalid.
    SIMPLE_SCHEMA = "KLN2003", "simple-schema";
    /// A resource id is not lowerCamelCase, is reserved, or is duplicated.
    RESOURCE_ID = "KLN2004", "resource-id";
    /// A resource has both or neither of `template` and `externalRef`, or an invalid combination.
    RESOURCE_SHAPE = "KLN2005", "resource-shape";
    /// A template is not a Kubernetes object (apiVersion, kind, metadata).
    TEMPLATE_OBJECT = "KLN2006", "template-object";
    /// A forEach entry is malformed, or an iterator name is invalid or duplicated.
    FOREACH_INVALID = "KLN2007", "foreach-invalid";
    /// Two definitions define the same kind.
    DUPLICATE_KIND = "KLN2008", "duplicate-kind";
    /// A template sets a label or annotation under the reserved `kro.run/` prefix.
    RESERVED_LABEL = "KLN2009", "reserved-label";
    /// A template's literal field is unknown to its kind's schema, or has the wrong type.
    TEMPLATE_SCHEMA = "KLN2010", "template-schema";
    /// A status field holds a fixed value instead of an expression.
    STATUS_STATIC = "KLN2011", "status-static";
    /// A custom status condition (`spec.schema.status.conditions`) breaks kro's rules: not a list
    /// of expressions, a literal status other than True/False/Unknown, an empty literal type, a
    /// type declared by two entries, or a lookup of an author or unknown condition on `schema`.
    STATUS_CONDITION = "KLN2012", "status-condition";
    /// A kind that resources of an RGD create or reference has no schema in the run (no bundled
    /// kind, CRD or RGD): its fields were not checked (a warning; an error under `--strict`).
    UNCHECKED_KIND = "KLN2013", "unchecked-kind";

    /// A `${…}` template that does not scan (nested expressions, unterminated quotes).
    TEMPLATE_SYNTAX = "KLN3001", "template-syntax";
    /// A CEL expression that does not parse.
    CEL_SYNTAX = "KLN3002", "cel-syntax";
    /// An expression references an identifier that is not in scope.
    UNKNOWN_IDENTIFIER = "KLN3003", "unknown-identifier";
    /// An expression calls a function that kiln's CEL environment does not have.
    UNKNOWN_FUNCTION = "KLN3004", "unknown-function";
    /// A field that must be one standalone expression (includeWhen, readyWhen, forEach) is not.
    NOT_STANDALONE = "KLN3005", "not-standalone";
    /// An expression is longer or deeper than the configured limit.
    EXPRESSION_LIMIT = "KLN3006", "expression-limit";
    /// omit() used where it is not allowed.
    OMIT_MISUSE = "KLN3007", "omit-misuse";
    /// An expression does not type-check: a field its operand's schema lacks, an operator or
    /// function applied to the wrong types.
    TYPE_CHECK = "KLN3008", "type-check";
    /// An expression's type does not fit the field it is written into.
    TYPE_MISMATCH = "KLN3009", "type-mismatch";
    /// includeWhen/readyWhen does not return a bool, a forEach dimension does not return a list,
    /// or a status condition does not return a condition (or a list of them).
    CONDITION_TYPE = "KLN3010", "condition-type";

    /// The resources of a graph depend on each other in a cycle.
    CYCLE = "KLN4001", "cycle";
    /// A resource references itself.
    SELF_REFERENCE = "KLN4002", "self-reference";
    /// A forEach dimension is not used in the resource's name or namespace.
    FOREACH_IDENTITY = "KLN4003", "foreach-identity";
    /// A forEach expression references another iterator.
    FOREACH_ITERATOR_REFERENCE = "KLN4004", "foreach-iterator-reference";
    /// ResourceGraphDefinitions instantiate each other in a cycle (nested compositions).
    NESTING_CYCLE = "KLN4005", "nesting-cycle";

    /// An instance does not satisfy the schema of its kind.
    INSTANCE_INVALID = "KLN5001", "instance-invalid";
    /// A CEL expression failed while rendering.
    EVALUATION = "KLN5002", "evaluation";
    /// An expression needs state that only exists in a live cluster (status, externalRef).
    NEEDS_CLUSTER = "KLN5003", "needs-cluster";
    /// An expression returned a value of the wrong type for where it is used.
    RESULT_TYPE = "KLN5004", "result-type";
    /// forEach produced two objects with the same identity, or too many objects.
    FOREACH_RESULT = "KLN5005", "foreach-result";
    /// A namespaced child of a cluster-scoped instance has no namespace.
    NAMESPACE = "KLN5006", "namespace";
    /// An expression evaluation exceeded the evaluation budget (iterations or value size).
    EVAL_BUDGET = "KLN5007", "eval-budget";
    /// Observed state was given but lacks what an expression reads (an externalRef's object, a
    /// resource's status).
    NOT_OBSERVED = "KLN5008", "not-observed";
    /// A resource was not evaluated because a resource it depends on failed (a warning beside
    /// that failure).
    NOT_EVALUATED = "KLN5009", "not-evaluated";

    /// A bug in kiln: please report it.
    INTERNAL = "KLN9001", "internal";
}
