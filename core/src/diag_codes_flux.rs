// Codes of Flux postBuild substitution (KLN8xxx; see docs/errors.md and docs/flux.md).
code_table! { FLUX;
    /// Strict mode: an object reads a variable that is not set, and no default operator
    /// (`${v:=d}`, `${v:-d}`) covers it.
    FLUX_VARIABLE_UNSET = "KLN8001", "flux-variable-unset";
    /// A `${…}` in an object does not parse (`${AUTH[@]}`: missing closing brace).
    FLUX_SUBSTITUTION_SYNTAX = "KLN8002", "flux-substitution-syntax";
    /// A variable name does not match `^[_[:alpha:]][_[:alpha:][:digit:]]*$`.
    FLUX_VARIABLE_NAME = "KLN8003", "flux-variable-name";
    /// After substitution the object is not one YAML mapping, or not valid UTF-8.
    FLUX_SUBSTITUTION_RESULT = "KLN8004", "flux-substitution-result";
    /// Substitution would produce more output, or need more pattern matching, than allowed.
    FLUX_SUBSTITUTION_LIMIT = "KLN8005", "flux-substitution-limit";
    /// A `substituteFrom` ConfigMap or Secret that is not `optional` does not exist.
    FLUX_SUBSTITUTE_FROM = "KLN8006", "flux-substitute-from";
    /// The `postBuild` block is invalid: an unknown key, a value of the wrong type, an unknown
    /// strategy or source kind.
    FLUX_POSTBUILD = "KLN8007", "flux-postbuild";
    /// A warning: an object holds `${` (or `$$`) that postBuild substitution would change, and
    /// neither escapes it nor opts out.
    FLUX_UNESCAPED = "KLN8008", "flux-unescaped";
}
