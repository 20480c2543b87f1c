//! Lowering of templated values: find every `${…}` in a value's strings and compile it once.
//!
//! Only string values are scanned, never mapping keys (as kro does). Each expression is compiled once
//! per definition: a [`Compiler`] caches programs by source text, so the same expression written in
//! several places (or instantiated by many instances) is parsed once.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::diag::{codes, Diagnostic};
use crate::document::Document;
use crate::expr::cel::{compile, CompileError, Compiled, ExprLimits};
use crate::expr::scan::{classify, Part as ScanPart, Template as Scanned};
use crate::fieldpath::FieldPath;
use crate::ir::{Expr, Hole, HoleKind, Part, Template};

/// Compiles expressions for one definition, caching by source text, and turns failures into
/// diagnostics located in the definition's document.
pub struct Compiler<'d> {
    doc: &'d Document,
    limits: ExprLimits,
    cache: HashMap<String, Arc<Compiled>>,
}

impl<'d> Compiler<'d> {
    /// A compiler for expressions of `doc`.
    pub fn new(doc: &'d Document, limits: ExprLimits) -> Self {
        Self {
            doc,
            limits,
            cache: HashMap::new(),
        }
    }

    /// Compile `source`, written as `written` at `path` of the document.
    pub fn expr(
        &mut self,
        source: &str,
        written: &str,
        path: &FieldPath,
    ) -> Result<Expr, Diagnostic> {
        let compiled = match self.cache.get(source) {
            Some(c) => Arc::clone(c),
            None => {
                let c = compile(source, &self.limits)
                    .map_err(|e| self.compile_error(e, source, path))?;
                let c = Arc::new(c);
                self.cache.insert(source.to_string(), Arc::clone(&c));
                c
            }
        };
        Ok(Expr {
            compiled,
            written: written.to_string(),
            path: path.clone(),
        })
    }

    fn compile_error(&self, e: CompileError, source: &str, path: &FieldPath) -> Diagnostic {
        let d = match e {
            CompileError::Syntax { message, position } => {
                let at = position
                    .map(|(l, c)| format!(" at {l}:{c}"))
                    .unwrap_or_default();
                Diagnostic::error(
                    codes::CEL_SYNTAX,
                    format!("invalid CEL expression {source:?}{at}: {message}"),
                )
                .with_hint("check the expression's syntax; string literals in CEL use quotes")
            }
            CompileError::UnknownFunctions(fs) => Diagnostic::error(
                codes::UNKNOWN_FUNCTION,
                format!(
                    "expression {source:?} uses unknown functions: [{}]",
                    fs.join(", ")
                ),
            )
            .with_hint("see docs/cel.md for the functions kiln's CEL environment provides"),
            CompileError::Limit(m) => Diagnostic::error(codes::EXPRESSION_LIMIT, m).with_hint(
                "split the expression or simplify it, or raise the limit: --limit \
                 expression-length=SIZE, expression-nesting=N or expression-depth=N (see \
                 docs/errors.md, KLN3006)",
            ),
        };
        self.doc.diag(d, path)
    }

    /// Scan one string value. `Ok(None)` if it holds no expression.
    pub fn string(&mut self, s: &str, path: &FieldPath) -> Result<Option<HoleKind>, Diagnostic> {
        if !crate::expr::scan::has_open(s) {
            return Ok(None);
        }
        let scanned = classify(s).map_err(|e| {
            self.doc.diag(
                Diagnostic::error(codes::TEMPLATE_SYNTAX, format!("{} in {s:?}", e.message))
                    .with_hint("to write a literal ${...}, use a CEL string: ${\"${VAR}\"}"),
                path,
            )
        })?;
        Ok(match scanned {
            Scanned::Literal => None,
            Scanned::Standalone(src) => Some(HoleKind::Standalone(self.expr(&src, s, path)?)),
            Scanned::Interpolated(parts) => {
                let mut out = Vec::with_capacity(parts.len());
                for p in parts {
                    out.push(match p {
                        ScanPart::Text(t) => Part::Text(t),
                        ScanPart::Expr(src) => Part::Expr(self.expr(&src, s, path)?),
                    });
                }
                Some(HoleKind::Interpolated(out))
            }
        })
    }

    /// A string that must be exactly one `${…}` (includeWhen, readyWhen, forEach).
    pub fn standalone(
        &mut self,
        v: &Value,
        path: &FieldPath,
        what: &str,
    ) -> Result<Expr, Diagnostic> {
        let not_standalone = || {
            self.doc.diag(
                Diagnostic::error(
                    codes::NOT_STANDALONE,
                    format!("{what}: only standalone expressions are allowed"),
                )
                .with_hint("write the whole value as one ${...}; a YAML block scalar must use |- so it has no trailing newline"),
                path,
            )
        };
        let Some(s) = v.as_str() else {
            return Err(not_standalone());
        };
        match self.string(s, path)? {
            Some(HoleKind::Standalone(e)) => Ok(e),
            _ => Err(not_standalone()),
        }
    }

    /// Lower a template value: every string with `${…}` becomes a hole. Reports every problem.
    pub fn template(&mut self, value: &Value, base: &FieldPath) -> (Template, Vec<Diagnostic>) {
        let mut holes = Vec::new();
        let mut diags = Vec::new();
        self.walk(
            value,
            &FieldPath::root(),
            &mut Vec::new(),
            base,
            &mut holes,
            &mut diags,
        );
        (
            Template {
                value: value.clone(),
                holes,
            },
            diags,
        )
    }

    fn walk(
        &mut self,
        v: &Value,
        rel: &FieldPath,
        position: &mut Vec<usize>,
        base: &FieldPath,
        holes: &mut Vec<Hole>,
        diags: &mut Vec<Diagnostic>,
    ) {
        match v {
            Value::String(s) => match self.string(s, &base.join(rel)) {
                Ok(Some(kind)) => holes.push(Hole {
                    path: rel.clone(),
                    position: position.clone(),
                    kind,
                }),
                Ok(None) => {}
                Err(d) => diags.push(d),
            },
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    position.push(i);
                    self.walk(item, &rel.index(i), position, base, holes, diags);
                    position.pop();
                }
            }
            Value::Object(m) => {
                for (i, (k, item)) in m.iter().enumerate() {
                    position.push(i);
                    self.walk(item, &rel.key(k), position, base, holes, diags);
                    position.pop();
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{parse_file, YamlLimits};

    /// A hole's position leads where its path does.
    #[test]
    fn positions_lead_where_paths_do() {
        let text = "a: 1\nb: {c: '${x}', d: [0, {e: 'pre-${y}'}, '${z}']}\n'f.g': '${w}'\n";
        let doc = &parse_file("t.yaml", text.to_string(), &YamlLimits::default()).unwrap()[0];
        let mut c = Compiler::new(doc, ExprLimits::default());
        let (t, diags) = c.template(&doc.value, &FieldPath::root());
        assert!(diags.is_empty());
        assert_eq!(t.holes.len(), 4);
        for h in &t.holes {
            let mut by_position = &t.value;
            for &i in &h.position {
                by_position = match by_position {
                    Value::Object(m) => m.values().nth(i).unwrap(),
                    Value::Array(a) => &a[i],
                    _ => panic!("{}: position crosses a scalar", h.path),
                };
            }
            assert_eq!(Some(by_position), h.path.get(&t.value), "{}", h.path);
        }
        assert_eq!(t.holes[1].position, vec![1, 1, 1, 0]);
    }
}
