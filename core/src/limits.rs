//! Every limit of a run in one place: its name (`kiln --limit NAME=VALUE`), its default, what it
//! bounds and the diagnostic that reports it.
//!
//! Each limit is enforced by the stage it belongs to, with that stage's own settings type
//! ([`YamlLimits`], [`ExprLimits`], [`EvalBudget`], [`RenderLimits`], the component and kurel
//! options). [`Limits`] holds one value of each, so a door takes them from its user in one form
//! and hands each stage its part; [`Limit`] names them for command lines, help texts and
//! documentation (the table in `docs/ARCHITECTURE.md`, "Limits", lists the same names).
//!
//! ```
//! use kiln_core::limits::{Limits, Setting};
//!
//! let mut limits = Limits::default();
//! limits.set(Setting::parse("input-bytes=1Mi").unwrap());
//! limits.set(Setting::parse("collection-size=50").unwrap());
//! assert_eq!(limits.yaml.max_input_bytes, 1 << 20);
//! assert_eq!(limits.render().max_collection_size, 50);
//! assert!(Setting::parse("yaml-depth=lots").is_err());
//! assert!(kiln_core::limits::check_output_size(2 << 30, limits.output_bytes).is_err());
//! ```

use std::fmt;

use crate::diag::{codes, quote, Code, Diagnostic};

// The settings type of each stage is defined here, at the bottom, so that this module imports
// nothing of the pipeline; each stage re-exports its own under its old path (`document::YamlLimits`,
// `expr::cel::ExprLimits`, `expr::budget::EvalBudget`, `render::RenderLimits`) and keeps the code
// that reads it (`YamlLimits::saphyr_budget` lives in `document`).

/// Limits on reading input, the same for every front-end (plain inputs, kurel packages and their
/// values files, kpatch values, `--crds`). A breach is KLN1005 naming the limit and the line.
///
/// The defaults are deliberately larger than the YAML library's (1,024 documents, depth 64,
/// 250,000 nodes, 1,000,000 events), which real repositories exceed: a rendered chart can hold
/// thousands of manifests, generated lists run to millions of items, CRD schemas nest deeply.
/// Every other budget of the library is derived from these (see [`YamlLimits::saphyr_budget`]),
/// so there is one set of numbers to document and configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YamlLimits {
    /// Largest accepted input, in bytes, per file. Scalar text after alias expansion is held to
    /// the same size.
    pub max_input_bytes: usize,
    /// Most documents, per file and in all inputs together.
    pub max_documents: usize,
    /// Deepest nesting of collections (JSON files: also at most 128, serde_json's own limit).
    pub max_depth: usize,
    /// Most nodes (scalars, lists, maps) per file, aliases expanded: what a large generated list
    /// runs into.
    pub max_nodes: usize,
    /// Most nodes that expanding aliases may produce, per file: this is what stops
    /// billion-laughs expansion early, long before `max_nodes` worth of memory is spent.
    pub max_alias_nodes: usize,
    /// Most alias references (`*name`) per file.
    pub max_aliases: usize,
}

impl Default for YamlLimits {
    fn default() -> Self {
        Self {
            max_input_bytes: 64 << 20,
            max_documents: 100_000,
            max_depth: 128,
            max_nodes: 5_000_000,
            max_alias_nodes: 500_000,
            max_aliases: 10_000,
        }
    }
}

/// Limits applied when compiling an expression, so a hostile template fails fast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExprLimits {
    /// Longest accepted expression, in bytes.
    pub max_length: usize,
    /// Deepest accepted nesting (parentheses, calls, lists) as counted by the parser.
    pub max_nesting: u16,
    /// Deepest accepted expression tree, counted on the parsed tree: every operator, call,
    /// selection and index is a level, so `1+1+…+1` with 5,000 terms is 5,000 levels deep
    /// although it has no brackets. Every walk over the tree (kiln's checks, the evaluator,
    /// dropping it) recurses once per level, so this is what keeps them inside their stacks.
    pub max_depth: u16,
}

impl Default for ExprLimits {
    fn default() -> Self {
        Self {
            max_length: 100_000,
            max_nesting: 64,
            max_depth: 250,
        }
    }
}

/// The deepest expression tree [`ExprLimits::max_depth`] may allow: every recursive walk over a
/// tree this deep fits in the 2 MiB stack of a rayon worker, in debug builds too (a test in
/// `expr::cel` walks trees of this depth, of every shape, on such a stack).
pub const EXPRESSION_MAX_DEPTH: u16 = 1000;

/// The deepest nesting the cel crate compiles: `Env::compile`, which expands the environment's
/// macros, has its own parser limit, whatever [`ExprLimits::max_nesting`] says.
pub const EXPRESSION_MAX_NESTING: u16 = 96;

/// Limits of one expression evaluation. Configurable; defaults are generous for real templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvalBudget {
    /// Units of work: comprehension iterations (all comprehensions of the expression together),
    /// plus a charge for copying large values (a quarter of an accumulator's entries per step;
    /// one unit per 64 bytes of a grown value).
    pub max_iterations: u64,
    /// Largest value (string bytes; list and map entries plus the weight of what they hold) an
    /// expression may build with a comprehension, `cel.bind` or a growing operation.
    pub max_value_size: usize,
}

impl Default for EvalBudget {
    fn default() -> Self {
        Self {
            max_iterations: 1_000_000,
            max_value_size: 10 << 20,
        }
    }
}

/// Limits on what one unit may produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderLimits {
    /// Most items one forEach may produce (kro's `--rgd-max-collection-size`).
    pub max_collection_size: usize,
    /// Work one expression evaluation may do.
    pub eval: EvalBudget,
}

impl Default for RenderLimits {
    fn default() -> Self {
        Self {
            max_collection_size: 1000,
            eval: EvalBudget::default(),
        }
    }
}

/// kurel: the default bound on nested `${…}` references between parameters.
pub const DEFAULT_VARIABLE_DEPTH: usize = 10;

/// The default output limit: 1 GiB. Real fleets are far below it (the benchmark's largest,
/// 10,000 kro instances and 10,000 components, render to 24 MB and 54 MB), and no GitOps tool
/// takes a gigabyte of manifests from one build (Argo CD's repo server and Flux's
/// kustomize-controller hold the whole output in memory), so an output this large is a runaway
/// template (a `forEach` product, a value doubled in a loop), not a repository. It stops the
/// output before it reaches a pipe, a disk or a git commit; memory is bounded earlier, by the
/// other limits.
pub const DEFAULT_OUTPUT_BYTES: usize = 1 << 30;

/// `kiln diff`: the default bound on the tree entries a revision's named paths hold. Git stores
/// a tree once however often it is referenced, so a repository of a few hundred kilobytes can
/// name 25 million paths (a tree of 5,000 files referenced 5,000 times); a million entries is
/// ten times the documents a run reads at most, and about a hundred megabytes of paths.
pub const DEFAULT_TREE_ENTRIES: usize = 1_000_000;

/// `kiln diff`: the default bound on the bytes of a revision's files under the named paths,
/// together (each is held in memory and written to a temporary directory): a blob referenced
/// many times is read once per path, so the bytes grow as the entries do. As the output limit.
pub const DEFAULT_TREE_BYTES: usize = 1 << 30;

/// Items one component-type `forEach` may produce by default (kro's own default is lower, see
/// [`RenderLimits`]).
pub const DEFAULT_COMPONENT_COLLECTION_SIZE: usize = 10_000;

/// Every limit of a run, as each stage wants it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Reading: file size, documents, nesting, nodes, aliases (every input, every front-end).
    pub yaml: YamlLimits,
    /// Expression length and nesting (kro and component types).
    pub expr: ExprLimits,
    /// Work and value size of one expression evaluation (kro and component types).
    pub eval: EvalBudget,
    /// Items one kro `forEach` may produce.
    pub collection_size: usize,
    /// Items one component-type `forEach` may produce.
    pub component_collection_size: usize,
    /// kurel: how deep `${…}` references between parameters may nest.
    pub variable_depth: usize,
    /// Bytes of rendered output (a stream on stdout, or every file of an output directory).
    pub output_bytes: usize,
    /// `kiln diff`: tree entries a revision's named paths may hold.
    pub tree_entries: usize,
    /// `kiln diff`: bytes of the files a revision's named paths hold, and of their paths,
    /// together.
    pub tree_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            yaml: YamlLimits::default(),
            expr: ExprLimits::default(),
            eval: EvalBudget::default(),
            collection_size: RenderLimits::default().max_collection_size,
            component_collection_size: DEFAULT_COMPONENT_COLLECTION_SIZE,
            variable_depth: DEFAULT_VARIABLE_DEPTH,
            output_bytes: DEFAULT_OUTPUT_BYTES,
            tree_entries: DEFAULT_TREE_ENTRIES,
            tree_bytes: DEFAULT_TREE_BYTES,
        }
    }
}

impl Limits {
    /// The defaults with `settings` applied in order (a later setting of a limit wins).
    pub fn with(settings: &[Setting]) -> Self {
        let mut l = Self::default();
        for s in settings {
            l.set(*s);
        }
        l
    }

    /// Change one limit. `collection-size` sets the kro and the component-type limit alike.
    pub fn set(&mut self, s: Setting) {
        // Values are checked against `Limit::max` when parsed; saturate anyway.
        let n = usize::try_from(s.value).unwrap_or(usize::MAX);
        match s.limit {
            Limit::InputBytes => self.yaml.max_input_bytes = n,
            Limit::Documents => self.yaml.max_documents = n,
            Limit::YamlDepth => self.yaml.max_depth = n,
            Limit::YamlNodes => self.yaml.max_nodes = n,
            Limit::AliasNodes => self.yaml.max_alias_nodes = n,
            Limit::Aliases => self.yaml.max_aliases = n,
            Limit::ExpressionLength => self.expr.max_length = n,
            Limit::ExpressionNesting => {
                self.expr.max_nesting = u16::try_from(s.value).unwrap_or(u16::MAX)
            }
            Limit::ExpressionDepth => {
                self.expr.max_depth = u16::try_from(s.value).unwrap_or(u16::MAX)
            }
            Limit::EvalCost => self.eval.max_iterations = s.value,
            Limit::ValueBytes => self.eval.max_value_size = n,
            Limit::CollectionSize => {
                self.collection_size = n;
                self.component_collection_size = n;
            }
            Limit::VariableDepth => self.variable_depth = n,
            Limit::OutputBytes => self.output_bytes = n,
            Limit::TreeEntries => self.tree_entries = n,
            Limit::TreeBytes => self.tree_bytes = n,
        }
    }

    /// The current value of one limit (for `collection-size`, kro's).
    pub fn get(&self, limit: Limit) -> u64 {
        let n = match limit {
            Limit::InputBytes => self.yaml.max_input_bytes,
            Limit::Documents => self.yaml.max_documents,
            Limit::YamlDepth => self.yaml.max_depth,
            Limit::YamlNodes => self.yaml.max_nodes,
            Limit::AliasNodes => self.yaml.max_alias_nodes,
            Limit::Aliases => self.yaml.max_aliases,
            Limit::ExpressionLength => self.expr.max_length,
            Limit::ExpressionNesting => usize::from(self.expr.max_nesting),
            Limit::ExpressionDepth => usize::from(self.expr.max_depth),
            Limit::EvalCost => return self.eval.max_iterations,
            Limit::ValueBytes => self.eval.max_value_size,
            Limit::CollectionSize => self.collection_size,
            Limit::VariableDepth => self.variable_depth,
            Limit::OutputBytes => self.output_bytes,
            Limit::TreeEntries => self.tree_entries,
            Limit::TreeBytes => self.tree_bytes,
        };
        n as u64
    }

    /// The evaluation limits of the kro front-end.
    pub fn render(&self) -> RenderLimits {
        RenderLimits {
            max_collection_size: self.collection_size,
            eval: self.eval,
        }
    }
}

/// One configurable limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Limit {
    /// Size of one input file.
    InputBytes,
    /// Documents per file and in all inputs together.
    Documents,
    /// Nesting depth of YAML and JSON.
    YamlDepth,
    /// Nodes per file, aliases expanded.
    YamlNodes,
    /// Nodes produced by expanding aliases, per file.
    AliasNodes,
    /// Alias references per file.
    Aliases,
    /// Length of one expression.
    ExpressionLength,
    /// Parser nesting of one expression.
    ExpressionNesting,
    /// Depth of one expression's parsed tree.
    ExpressionDepth,
    /// Units of work of one expression evaluation.
    EvalCost,
    /// Size of a value one expression builds.
    ValueBytes,
    /// Items one `forEach` produces.
    CollectionSize,
    /// Nesting of kurel variable references.
    VariableDepth,
    /// Size of the rendered output.
    OutputBytes,
    /// `kiln diff`: tree entries of a revision's named paths.
    TreeEntries,
    /// `kiln diff`: bytes of the files of a revision's named paths.
    TreeBytes,
}

impl Limit {
    /// Every limit, in the order help texts and documentation list them.
    pub const ALL: [Limit; 16] = [
        Limit::InputBytes,
        Limit::Documents,
        Limit::YamlDepth,
        Limit::YamlNodes,
        Limit::AliasNodes,
        Limit::Aliases,
        Limit::ExpressionLength,
        Limit::ExpressionNesting,
        Limit::ExpressionDepth,
        Limit::EvalCost,
        Limit::ValueBytes,
        Limit::CollectionSize,
        Limit::VariableDepth,
        Limit::OutputBytes,
        Limit::TreeEntries,
        Limit::TreeBytes,
    ];

    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Limit::InputBytes => "input-bytes",
            Limit::Documents => "documents",
            Limit::YamlDepth => "yaml-depth",
            Limit::YamlNodes => "yaml-nodes",
            Limit::AliasNodes => "alias-nodes",
            Limit::Aliases => "aliases",
            Limit::ExpressionLength => "expression-length",
            Limit::ExpressionNesting => "expression-nesting",
            Limit::ExpressionDepth => "expression-depth",
            Limit::EvalCost => "eval-cost",
            Limit::ValueBytes => "value-bytes",
            Limit::CollectionSize => "collection-size",
            Limit::VariableDepth => "variable-depth",
            Limit::OutputBytes => "output-bytes",
            Limit::TreeEntries => "tree-entries",
            Limit::TreeBytes => "tree-bytes",
        }
    }

    /// The limit with this name.
    pub fn from_name(name: &str) -> Option<Limit> {
        Limit::ALL.into_iter().find(|l| l.name() == name)
    }

    /// What it bounds, in a few words.
    pub fn what(self) -> &'static str {
        match self {
            Limit::InputBytes => "size of one input file (and of its text once aliases are expanded)",
            Limit::Documents => "documents, per file and in all inputs together",
            Limit::YamlDepth => "nesting depth of YAML and JSON",
            Limit::YamlNodes => "nodes (scalars, lists, maps) per file, aliases expanded",
            Limit::AliasNodes => "nodes produced by expanding aliases, per file",
            Limit::Aliases => "alias references (*name) per file",
            Limit::ExpressionLength => "length of one CEL expression",
            Limit::ExpressionNesting => "parser nesting depth of one CEL expression",
            Limit::ExpressionDepth => {
                "depth of one CEL expression's tree (each operator, call, selection, index is a level)"
            }
            Limit::EvalCost => {
                "units of work of one expression evaluation (comprehension iterations, copies of large values)"
            }
            Limit::ValueBytes => {
                "size of a string, list or map one expression builds (comprehensions, cel.bind, +, replace, join, ...)"
            }
            Limit::CollectionSize => "items one forEach may produce",
            Limit::VariableDepth => "kurel: nesting of ${...} references between parameters",
            Limit::OutputBytes => "rendered output (stdout, or all files of -o DIR together)",
            Limit::TreeEntries => {
                "kiln diff: entries of a revision's trees under the paths named (git stores a tree once however often it is named)"
            }
            Limit::TreeBytes => {
                "kiln diff: bytes of a revision's files under the paths named, and of their paths, together"
            }
        }
    }

    /// The diagnostic reporting a breach.
    pub fn code(self) -> Code {
        match self {
            Limit::InputBytes
            | Limit::Documents
            | Limit::YamlDepth
            | Limit::YamlNodes
            | Limit::AliasNodes
            | Limit::Aliases
            | Limit::TreeEntries
            | Limit::TreeBytes => codes::YAML_BUDGET,
            Limit::ExpressionLength | Limit::ExpressionNesting | Limit::ExpressionDepth => {
                codes::EXPRESSION_LIMIT
            }
            Limit::EvalCost | Limit::ValueBytes => codes::EVAL_BUDGET,
            Limit::CollectionSize => codes::FOREACH_RESULT,
            Limit::VariableDepth => codes::KUREL_VARIABLE_DEPTH,
            Limit::OutputBytes => codes::OUTPUT_LIMIT,
        }
    }

    /// Whether the value is a number of bytes (printed with a binary suffix where exact).
    pub fn is_bytes(self) -> bool {
        matches!(
            self,
            Limit::InputBytes
                | Limit::ExpressionLength
                | Limit::ValueBytes
                | Limit::OutputBytes
                | Limit::TreeBytes
        )
    }

    /// The largest accepted value. Limits on nesting are capped: `yaml-depth` well inside what
    /// the recursive YAML parser and value conversions handle on kiln's stacks (deeper input
    /// would crash instead of failing with a diagnostic), `expression-nesting` at what the cel
    /// crate compiles at all ([`EXPRESSION_MAX_NESTING`]), `variable-depth` at ten times
    /// kurel's own default. The others are bounded only by what the machine holds.
    pub fn max(self) -> u64 {
        match self {
            Limit::YamlDepth => 512,
            Limit::ExpressionNesting => u64::from(EXPRESSION_MAX_NESTING),
            Limit::ExpressionDepth => u64::from(EXPRESSION_MAX_DEPTH),
            Limit::VariableDepth => 100,
            _ => usize::MAX as u64,
        }
    }

    /// A diagnostic's hint: `advice`, then how to raise this limit.
    pub fn hint(self, advice: &str) -> String {
        let example = if self.is_bytes() { "SIZE" } else { "N" };
        format!(
            "{advice}, or raise the limit: --limit {}={example} (see docs/errors.md, {})",
            self.name(),
            self.code().id
        )
    }

    /// The default, as help texts print it (for `collection-size`, kro's).
    pub fn default_text(self) -> String {
        amount(Limits::default().get(self), self.is_bytes())
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A value with a binary suffix when it is an exact multiple of one (`64Mi`), else plain.
fn amount(v: u64, bytes: bool) -> String {
    if bytes {
        for (suffix, shift) in [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)] {
            if v >= 1 << shift && v % (1 << shift) == 0 {
                return format!("{}{suffix}", v >> shift);
            }
        }
    }
    v.to_string()
}

/// One `NAME=VALUE` from the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// Which limit.
    pub limit: Limit,
    /// Its new value.
    pub value: u64,
}

impl Setting {
    /// Parse `NAME=VALUE`. VALUE is a positive whole number, with `_` allowed between digits and
    /// an optional suffix: `Ki`, `Mi`, `Gi`, `Ti` (powers of 1024) or `k`, `M`, `G`, `T` (powers
    /// of 1000), for any limit. The message of an error says what is wrong and what is accepted.
    pub fn parse(s: &str) -> Result<Setting, String> {
        let names = || {
            Limit::ALL
                .iter()
                .map(|l| l.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let Some((name, value)) = s.split_once('=') else {
            return Err(format!(
                "expected NAME=VALUE, e.g. input-bytes=128Mi (limits: {})",
                names()
            ));
        };
        let name = name.trim();
        let Some(limit) = Limit::from_name(name) else {
            return Err(format!(
                "unknown limit {} (limits: {})",
                quote(name),
                names()
            ));
        };
        let value = parse_amount(value.trim()).map_err(|e| format!("{name}: {e}"))?;
        if value == 0 {
            return Err(format!("{name}: must be at least 1"));
        }
        if value > limit.max() {
            return Err(format!(
                "{name}: {value} is more than the highest accepted value, {}",
                limit.max()
            ));
        }
        Ok(Setting { limit, value })
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}={}",
            self.limit,
            amount(self.value, self.limit.is_bytes())
        )
    }
}

fn parse_amount(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "{} is not a number (examples: 5000, 64Mi, 1Gi, 2M)",
            quote(text)
        )
    };
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '_'))
        .unwrap_or(text.len());
    let (digits, suffix) = text.split_at(split);
    let factor: u64 = match suffix {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        _ => return Err(bad()),
    };
    if digits.is_empty() || digits.starts_with('_') || digits.ends_with('_') {
        return Err(bad());
    }
    let n: u64 = digits.replace('_', "").parse().map_err(|_| {
        if digits.len() > 19 {
            format!("{} is too large", quote(text))
        } else {
            bad()
        }
    })?;
    n.checked_mul(factor)
        .ok_or_else(|| format!("{} is too large", quote(text)))
}

/// A help text listing every limit with its default (for `--limit` in `--help`).
pub fn help() -> String {
    let mut s = String::from(
        "Change a limit: NAME=VALUE (repeatable). VALUE is a whole number, optionally with a \
suffix Ki, Mi, Gi (powers of 1024) or k, M, G (powers of 1000). A run over a limit fails with \
the diagnostic shown in brackets. See docs/ARCHITECTURE.md, \"Limits\".\n\n\
NAME=DEFAULT: what it bounds\n",
    );
    for l in Limit::ALL {
        let mut notes = Vec::new();
        if l == Limit::CollectionSize {
            notes.push(format!(
                "component types: {}",
                Limits::default().component_collection_size
            ));
        }
        if l.max() < usize::MAX as u64 {
            notes.push(format!("at most {}", l.max()));
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        };
        s.push_str(&format!(
            "  {}={}: {}{notes} [{}]\n",
            l.name(),
            l.default_text(),
            l.what(),
            l.code().id
        ));
    }
    s.truncate(s.trim_end().len());
    s
}

/// Check the size of the rendered output against the limit: KLN1009 when it is over, so the
/// caller writes nothing.
pub fn check_output_size(bytes: usize, limit: usize) -> Result<(), Diagnostic> {
    check_output_prefix(bytes, limit, false)
}

/// [`check_output_size`] for output measured part by part: `at_least` says `bytes` is only what
/// was measured before the limit was passed.
pub(crate) fn check_output_prefix(
    bytes: usize,
    limit: usize,
    at_least: bool,
) -> Result<(), Diagnostic> {
    if bytes <= limit {
        return Ok(());
    }
    let size = if at_least {
        format!("would be at least {bytes} bytes")
    } else {
        format!("is {bytes} bytes")
    };
    Err(Diagnostic::error(
        codes::OUTPUT_LIMIT,
        format!(
            "the rendered output {size}, more than the limit of {limit} bytes ({})",
            Limit::OutputBytes
        ),
    )
    .with_hint(format!(
        "render fewer inputs per run, or raise the limit with --limit {}=SIZE (e.g. {}=2Gi)",
        Limit::OutputBytes,
        Limit::OutputBytes
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_numbers_and_suffixes() {
        let p = |s: &str| Setting::parse(s).map(|s| (s.limit, s.value));
        assert_eq!(p("input-bytes=64Mi"), Ok((Limit::InputBytes, 64 << 20)));
        assert_eq!(p("output-bytes=1Gi"), Ok((Limit::OutputBytes, 1 << 30)));
        assert_eq!(p("documents=100_000"), Ok((Limit::Documents, 100_000)));
        assert_eq!(p("eval-cost=2M"), Ok((Limit::EvalCost, 2_000_000)));
        assert_eq!(p("aliases=10k"), Ok((Limit::Aliases, 10_000)));
        assert_eq!(p(" yaml-depth = 20 "), Ok((Limit::YamlDepth, 20)));
        for (bad, why) in [
            ("input-bytes", "expected NAME=VALUE"),
            ("nope=1", "unknown limit \"nope\""),
            ("documents=", "documents: \"\" is not a number"),
            ("documents=-1", "documents: \"-1\" is not a number"),
            ("documents=0", "documents: must be at least 1"),
            ("documents=1.5", "documents: \"1.5\" is not a number"),
            ("documents=1Xi", "documents: \"1Xi\" is not a number"),
            ("documents=_1", "documents: \"_1\" is not a number"),
            ("documents=99999999999999999999", "is too large"),
            (
                "output-bytes=20000000Ti",
                "output-bytes: \"20000000Ti\" is too large",
            ),
            (
                "yaml-depth=513",
                "more than the highest accepted value, 512",
            ),
            (
                "expression-nesting=70000",
                "more than the highest accepted value, 96",
            ),
        ] {
            let refused = Setting::parse(bad).expect_err("an error");
            assert!(refused.to_string().contains(why), "{bad}: {refused}");
        }
        let e = Setting::parse("nope=1").unwrap_err();
        assert!(
            e.contains("unknown limit") && e.contains("output-bytes"),
            "{e}"
        );
    }

    #[test]
    fn every_setting_reaches_its_stage() {
        for l in Limit::ALL {
            let mut limits = Limits::default();
            assert_ne!(limits.get(l), 7, "{l}");
            limits.set(Setting { limit: l, value: 7 });
            assert_eq!(limits.get(l), 7, "{l}");
            assert_eq!(Setting::parse(&format!("{l}=7")).unwrap().limit, l);
        }
        let l = Limits::with(&[Setting::parse("collection-size=3").unwrap()]);
        assert_eq!((l.collection_size, l.component_collection_size), (3, 3));
        assert_eq!(l.render().max_collection_size, 3);
    }

    #[test]
    fn defaults_print_with_suffixes() {
        assert_eq!(Limit::InputBytes.default_text(), "64Mi");
        assert_eq!(Limit::OutputBytes.default_text(), "1Gi");
        assert_eq!(Limit::Documents.default_text(), "100000");
        assert_eq!(Limit::CollectionSize.default_text(), "1000");
        let h = help();
        for l in Limit::ALL {
            assert!(h.contains(&format!("  {l}={}: ", l.default_text())), "{l}");
        }
        assert!(h.contains("(component types: 10000) [KLN5005]"), "{h}");
        assert!(h.contains("(at most 512) [KLN1005]"), "{h}");
    }

    #[test]
    fn output_size() {
        assert!(check_output_size(10, 10).is_ok());
        let d = check_output_size(11, 10).unwrap_err();
        assert_eq!(d.code, codes::OUTPUT_LIMIT);
        assert_eq!(
            d.message,
            "the rendered output is 11 bytes, more than the limit of 10 bytes (output-bytes)"
        );
    }

    /// Every limit is in the one table that documents them, with its default.
    #[test]
    fn documented() {
        let arch = include_str!("../../docs/ARCHITECTURE.md");
        for l in Limit::ALL {
            let row = arch
                .lines()
                .find(|r| r.starts_with(&format!("| `{}` |", l.name())))
                .unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no row for {l}"));
            let default = l.default_text();
            let first = default.split(' ').next().unwrap();
            assert!(
                row.replace(',', "").contains(first),
                "{l}: default {default} not in {row}"
            );
            assert!(row.contains(l.code().id), "{l}: code not in {row}");
        }
        // README's list of limits names each one with its default (issue 40: it lacked
        // expression-depth).
        let readme = include_str!("../../README.md")
            .replace(',', "")
            .replace('\n', " ");
        let readme = readme.split_whitespace().collect::<Vec<_>>().join(" ");
        for l in Limit::ALL {
            let first = l.default_text();
            let first = first.split(' ').next().unwrap();
            assert!(
                readme.contains(&format!("`{}` ({first}", l.name())),
                "README.md's list of limits lacks `{l}` ({first}…)"
            );
        }
    }
}
