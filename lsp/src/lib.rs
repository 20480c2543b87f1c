//! `kiln lsp`: the Language Server Protocol door. It holds only the protocol: what an editor
//! asks becomes a call into [`kiln_core::ide`] (the same analysis `kiln validate` runs), and its
//! answer becomes the protocol's types; byte offsets become UTF-16 positions here ([`text`]).
//!
//! The workspace is the folder the editor opened (`rootUri`, the first workspace folder, or the
//! server's working directory), checked as `kiln validate FOLDER` checks it, with the editor's
//! unsaved buffers over the files on disk. Once initialized, and on every change of an open
//! file (and every save), the server checks the whole workspace again and publishes every
//! file's diagnostics (an empty list for a file whose diagnostics are gone), so a change to an
//! RGD re-checks its instances in other files.
//!
//! Every request is answered: an unknown method, bad parameters or a panic inside a handler is
//! an error response, and the server goes on. Initialization options: `crds` (paths, as
//! `--crds`) and `errorsDocument` (the URL of docs/errors.md that diagnostics' codes link to,
//! `#kln3008-type-check` appended; by default the file of the checkout kiln was built from).

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use kiln_core::diag::Diagnostic;
use kiln_core::ide::{self, workspace::Workspace};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types as lsp;
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use serde_json::Value;

mod convert;
pub mod text;
pub mod uri;

pub use convert::{code_href, diagnostic_message, diagnostic_range};

/// Serve over stdin and stdout until the editor says `exit`. `Ok(true)` after a `shutdown`
/// then `exit`, `Ok(false)` for an `exit` without `shutdown` or a closed input (the process
/// then exits with 1, as the protocol asks).
pub fn serve_stdio(crds: Vec<PathBuf>) -> Result<bool, String> {
    let (conn, io) = Connection::stdio();
    let clean = serve(&conn, crds)?;
    drop(conn);
    io.join().map_err(|e| format!("kiln lsp: {e}"))?;
    Ok(clean)
}

/// Serve one connection: the initialize handshake, then every message until `exit`.
pub fn serve(conn: &Connection, crds: Vec<PathBuf>) -> Result<bool, String> {
    let (id, params) = conn
        .initialize_start()
        .map_err(|e| format!("kiln lsp: {e}"))?;
    let mut server = Server::new(&params, crds);
    let result = serde_json::json!({
        "capabilities": capabilities(),
        "serverInfo": { "name": "kiln", "version": env!("CARGO_PKG_VERSION") },
    });
    // Returns once the editor said `initialized`.
    conn.initialize_finish(id, result)
        .map_err(|e| format!("kiln lsp: {e}"))?;
    // The first check: every problem of the folder, open in the editor or not.
    for m in server.check() {
        send(conn, m);
    }
    for msg in &conn.receiver {
        match msg {
            Message::Request(req) => {
                let resp = server.respond(req);
                send(conn, resp.into());
            }
            Message::Notification(n) if n.method == lsp::notification::Exit::METHOD => {
                return Ok(server.shut_down);
            }
            Message::Notification(n) => {
                let method = n.method.clone();
                match catch_unwind(AssertUnwindSafe(|| server.notified(n))) {
                    Ok(out) => out.into_iter().for_each(|m| send(conn, m)),
                    Err(_) => eprintln!("kiln lsp: {method} failed (a bug); the server goes on"),
                }
            }
            Message::Response(_) => {}
        }
    }
    Ok(false)
}

fn send(conn: &Connection, msg: Message) {
    // A closed output ends the loop when the input closes too; nothing to answer then.
    let _ = conn.sender.send(msg);
}

/// What the server offers.
pub fn capabilities() -> lsp::ServerCapabilities {
    lsp::ServerCapabilities {
        text_document_sync: Some(lsp::TextDocumentSyncCapability::Options(
            lsp::TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(lsp::TextDocumentSyncKind::INCREMENTAL),
                save: Some(lsp::TextDocumentSyncSaveOptions::Supported(true)),
                ..lsp::TextDocumentSyncOptions::default()
            },
        )),
        hover_provider: Some(lsp::HoverProviderCapability::Simple(true)),
        completion_provider: Some(lsp::CompletionOptions {
            trigger_characters: Some(vec![".".into(), "{".into(), "|".into()]),
            ..lsp::CompletionOptions::default()
        }),
        definition_provider: Some(lsp::OneOf::Left(true)),
        references_provider: Some(lsp::OneOf::Left(true)),
        document_symbol_provider: Some(lsp::OneOf::Left(true)),
        code_action_provider: Some(lsp::CodeActionProviderCapability::Simple(true)),
        ..lsp::ServerCapabilities::default()
    }
}

/// An error response's code and message.
type Failure = (ErrorCode, String);

struct Server {
    workspace: Workspace,
    /// Open documents: file name → the editor's text (changes apply to it).
    open: BTreeMap<String, String>,
    /// The diagnostics last published, per file: what code actions fix.
    published: BTreeMap<String, Vec<Diagnostic>>,
    /// The file-less diagnostics last shown.
    unplaced: Vec<Diagnostic>,
    errors_doc: String,
    shut_down: bool,
    /// Settings not acted on, told to the editor with the first check.
    refused: Vec<String>,
}

impl Server {
    fn new(params: &Value, mut crds: Vec<PathBuf>) -> Self {
        let root = root_of(params);
        let options = &params["initializationOptions"];
        // Editor settings can come with the repository (`.vscode/settings.json`,
        // `.helix/languages.toml`): their paths are read inside the folder, never outside it.
        let mut refused = Vec::new();
        for c in options["crds"].as_array().into_iter().flatten() {
            match c.as_str().map(|c| inside(&root, c)) {
                Some(Ok(p)) => crds.push(p),
                Some(Err(why)) => refused.push(why),
                None => refused.push(format!("kiln lsp: crds: {c} is not a path; not read")),
            }
        }
        let errors_doc = options["errorsDocument"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(default_errors_doc);
        Self {
            workspace: Workspace::new(root).with_crds(crds),
            open: BTreeMap::new(),
            published: BTreeMap::new(),
            unplaced: Vec::new(),
            errors_doc,
            shut_down: false,
            refused,
        }
    }

    fn respond(&mut self, req: Request) -> Response {
        let id = req.id.clone();
        let method = req.method.clone();
        let result = if self.shut_down {
            Err((
                ErrorCode::InvalidRequest,
                format!("{method} after shutdown: only exit is expected"),
            ))
        } else {
            catch_unwind(AssertUnwindSafe(|| self.request(req))).unwrap_or_else(|_| {
                Err((
                    ErrorCode::InternalError,
                    format!("kiln lsp: {method} failed (a bug); the server goes on"),
                ))
            })
        };
        match result {
            Ok(v) => Response::new_ok(id, v),
            Err((code, message)) => Response::new_err(id, code as i32, message),
        }
    }

    fn request(&mut self, req: Request) -> Result<Value, Failure> {
        use lsp::request as r;
        let p = req.params;
        let json = |v: Result<Value, serde_json::Error>| {
            v.map_err(|e| (ErrorCode::InternalError, e.to_string()))
        };
        match req.method.as_str() {
            r::Shutdown::METHOD => {
                self.shut_down = true;
                Ok(Value::Null)
            }
            r::HoverRequest::METHOD => {
                let p: lsp::HoverParams = params(p)?;
                let (file, text, at) = self.at(&p.text_document_position_params)?;
                // An answer quotes the texts (a declaration, a default): a secret value in it
                // is blanked as in diagnostics.
                let h = ide::hover(self.workspace.texts(), &file, at).map(|h| ide::Hover {
                    markdown: self.workspace.redact(&h.markdown),
                    ..h
                });
                json(serde_json::to_value(h.map(|h| convert::hover(h, &text))))
            }
            r::Completion::METHOD => {
                let p: lsp::CompletionParams = params(p)?;
                let (file, text, at) = self.at(&p.text_document_position)?;
                let items: Vec<_> = ide::complete(self.workspace.texts(), &file, at)
                    .into_iter()
                    .map(|c| ide::Completion {
                        detail: c.detail.map(|d| self.workspace.redact(&d)),
                        ..c
                    })
                    .map(|c| convert::completion(c, &text))
                    .collect();
                json(serde_json::to_value(items))
            }
            r::GotoDefinition::METHOD => {
                let p: lsp::GotoDefinitionParams = params(p)?;
                let (file, _, at) = self.at(&p.text_document_position_params)?;
                let found = ide::definition(self.workspace.texts(), &file, at);
                json(serde_json::to_value(self.locations(found)))
            }
            r::References::METHOD => {
                let p: lsp::ReferenceParams = params(p)?;
                let (file, _, at) = self.at(&p.text_document_position)?;
                let found = ide::references(self.workspace.texts(), &file, at);
                json(serde_json::to_value(self.locations(found)))
            }
            r::DocumentSymbolRequest::METHOD => {
                let p: lsp::DocumentSymbolParams = params(p)?;
                let (file, text) = self.document(&p.text_document.uri)?;
                let symbols: Vec<_> = ide::symbols(self.workspace.texts(), &file)
                    .into_iter()
                    .map(|s| convert::symbol(s, &text))
                    .collect();
                json(serde_json::to_value(symbols))
            }
            r::CodeActionRequest::METHOD => {
                let p: lsp::CodeActionParams = params(p)?;
                let (file, text) = self.document(&p.text_document.uri)?;
                let range = text::byte_range(&text, p.range);
                let diagnostics = self.published.get(&file).cloned().unwrap_or_default();
                let actions: Vec<_> =
                    ide::actions(self.workspace.texts(), &file, range, &diagnostics)
                        .into_iter()
                        .map(|a| self.action(a))
                        .collect();
                json(serde_json::to_value(actions))
            }
            other => Err((
                ErrorCode::MethodNotFound,
                format!("kiln lsp does not answer {other}"),
            )),
        }
    }

    /// The file, its text and the byte offset of a position.
    fn at(&self, p: &lsp::TextDocumentPositionParams) -> Result<(String, String, usize), Failure> {
        let (file, text) = self.document(&p.text_document.uri)?;
        let at = text::offset(&text, p.position);
        Ok((file, text, at))
    }

    /// The file a URI names and its text (the editor's, the last check's, or the disk's).
    fn document(&self, uri: &lsp::Uri) -> Result<(String, String), Failure> {
        let file = name_of(uri).ok_or_else(|| {
            (
                ErrorCode::InvalidParams,
                format!(
                    "not a file:// URI: {}",
                    kiln_core::diag::quote(uri.as_str())
                ),
            )
        })?;
        let text = self.text_of(&file);
        Ok((file, text))
    }

    fn text_of(&self, file: &str) -> String {
        self.open
            .get(file)
            .or_else(|| self.workspace.texts().get(file))
            .cloned()
            // A file kiln could not read as text (not UTF-8) still has lines to point at; only
            // a regular file of the folder, within the reading limit (a URI can name anything,
            // `/dev/zero` included).
            .or_else(|| {
                let path = Path::new(file);
                let limit = kiln_core::document::YamlLimits::default().max_input_bytes;
                let meta = std::fs::metadata(path).ok()?;
                (path.starts_with(self.workspace.root())
                    && meta.is_file()
                    && meta.len() <= limit as u64)
                    .then(|| std::fs::read(path).ok())
                    .flatten()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
            })
            .unwrap_or_default()
    }

    fn locations(&self, found: Vec<ide::Location>) -> Vec<lsp::Location> {
        found
            .into_iter()
            .filter_map(|l| {
                let text = self.text_of(&l.file);
                Some(lsp::Location {
                    uri: self.uri_of(&l.file)?,
                    range: text::range(&text, l.range),
                })
            })
            .collect()
    }

    fn action(&self, a: ide::Action) -> lsp::CodeAction {
        // lsp-types keys a WorkspaceEdit's changes by its `Uri`, whose parsed form clippy
        // takes for interior mutability; the key is never changed while in the map.
        #[allow(clippy::mutable_key_type)]
        let mut changes: std::collections::HashMap<lsp::Uri, Vec<lsp::TextEdit>> =
            Default::default();
        for e in a.edits {
            let text = self.text_of(&e.location.file);
            if let Some(uri) = self.uri_of(&e.location.file) {
                changes.entry(uri).or_default().push(lsp::TextEdit {
                    range: text::range(&text, e.location.range),
                    new_text: e.text,
                });
            }
        }
        lsp::CodeAction {
            title: a.title,
            kind: Some(lsp::CodeActionKind::QUICKFIX),
            edit: Some(lsp::WorkspaceEdit {
                changes: Some(changes),
                ..lsp::WorkspaceEdit::default()
            }),
            ..lsp::CodeAction::default()
        }
    }

    /// A file name's URI: names are absolute paths, or relative to the root (a `--crds` path).
    fn uri_of(&self, file: &str) -> Option<lsp::Uri> {
        uri::of_path(&self.workspace.root().join(file))
    }

    fn notified(&mut self, n: Notification) -> Vec<Message> {
        use lsp::notification as n_;
        let changed = match n.method.as_str() {
            n_::DidOpenTextDocument::METHOD => {
                let Ok(p) = params::<lsp::DidOpenTextDocumentParams>(n.params) else {
                    return Vec::new();
                };
                name_of(&p.text_document.uri).map(|f| (f, p.text_document.text))
            }
            n_::DidChangeTextDocument::METHOD => {
                let Ok(p) = params::<lsp::DidChangeTextDocumentParams>(n.params) else {
                    return Vec::new();
                };
                name_of(&p.text_document.uri).map(|f| {
                    let mut text = self.text_of(&f);
                    for c in p.content_changes {
                        text::apply(&mut text, c);
                    }
                    (f, text)
                })
            }
            n_::DidCloseTextDocument::METHOD => {
                let Ok(p) = params::<lsp::DidCloseTextDocumentParams>(n.params) else {
                    return Vec::new();
                };
                if let Some(f) = name_of(&p.text_document.uri) {
                    self.open.remove(&f);
                    self.workspace.close(&f);
                }
                return self.check();
            }
            // Files may have changed on disk.
            n_::DidSaveTextDocument::METHOD | n_::DidChangeWatchedFiles::METHOD => {
                return self.check()
            }
            _ => return Vec::new(),
        };
        if let Some((file, text)) = changed {
            self.workspace.set_text(&file, text.clone());
            self.open.insert(file, text);
        }
        self.check()
    }

    /// Check the workspace and publish every file's diagnostics.
    fn check(&mut self) -> Vec<Message> {
        let found = self.workspace.diagnostics();
        let mut out: Vec<Message> = std::mem::take(&mut self.refused)
            .into_iter()
            .map(|message| {
                Message::Notification(Notification::new(
                    lsp::notification::ShowMessage::METHOD.to_string(),
                    lsp::ShowMessageParams {
                        typ: lsp::MessageType::ERROR,
                        message,
                    },
                ))
            })
            .collect();
        for (file, diagnostics) in &found.files {
            let Some(uri) = self.uri_of(file) else {
                continue;
            };
            let text = self.text_of(file);
            let params = lsp::PublishDiagnosticsParams {
                uri,
                diagnostics: diagnostics
                    .iter()
                    .map(|d| convert::diagnostic(d, &text, &self.errors_doc))
                    .collect(),
                version: None,
            };
            out.push(Message::Notification(Notification::new(
                lsp::notification::PublishDiagnostics::METHOD.to_string(),
                params,
            )));
        }
        if found.unplaced != self.unplaced && !found.unplaced.is_empty() {
            let message = found
                .unplaced
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n");
            out.push(Message::Notification(Notification::new(
                lsp::notification::ShowMessage::METHOD.to_string(),
                lsp::ShowMessageParams {
                    typ: lsp::MessageType::ERROR,
                    message,
                },
            )));
        }
        self.unplaced = found.unplaced;
        for (file, diagnostics) in found.files {
            if diagnostics.is_empty() {
                self.published.remove(&file);
            } else {
                self.published.insert(file, diagnostics);
            }
        }
        out
    }
}

fn params<P: serde::de::DeserializeOwned>(v: Value) -> Result<P, Failure> {
    serde_json::from_value(v).map_err(|e| (ErrorCode::InvalidParams, e.to_string()))
}

/// The file name (as the workspace names files) of a `file://` URI.
fn name_of(uri: &lsp::Uri) -> Option<String> {
    uri::path_of(uri).map(|p| p.display().to_string())
}

/// The workspace folder: `rootUri`, else the first workspace folder, else `rootPath`, else the
/// working directory; absolute, so every file's name is its path.
fn root_of(params: &Value) -> PathBuf {
    let from_uri = |v: &Value| {
        v.as_str()
            .and_then(|s| s.parse::<lsp::Uri>().ok())
            .and_then(|u| uri::path_of(&u))
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let root = from_uri(&params["rootUri"])
        .or_else(|| from_uri(&params["workspaceFolders"][0]["uri"]))
        .or_else(|| params["rootPath"].as_str().map(PathBuf::from))
        .unwrap_or_else(|| cwd.clone());
    cwd.join(root)
}

/// `path`, a setting's path, read inside `root`: relative, no `..`, and (where it exists) not
/// reaching out through a symbolic link.
fn inside(root: &Path, path: &str) -> Result<PathBuf, String> {
    use std::path::Component;
    let shown: String = path.chars().take(120).collect();
    let refused = |why: &str| Err(format!("kiln lsp: crds: {shown:?} {why}; not read"));
    let p = Path::new(path);
    if p.components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return refused("leaves the workspace folder (absolute, or with `..`)");
    }
    let joined = root.join(p);
    if let (Ok(r), Ok(j)) = (root.canonicalize(), joined.canonicalize()) {
        if !j.starts_with(&r) {
            return refused("reaches outside the workspace folder through a symbolic link");
        }
    }
    Ok(joined)
}

/// docs/errors.md of the checkout kiln was built from.
fn default_errors_doc() -> String {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("/"))
        .join("docs/errors.md");
    uri::of_path(&doc)
        .map(|u| u.as_str().to_string())
        .unwrap_or_default()
}
